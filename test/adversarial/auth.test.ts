/**
 * Tokens and auth: malformed tokens are a 401 that names where the token was looked for and never echoes it (never a 500), control
 * bytes in a header are a 400 from the client-error handler, expiry is exact to
 * the millisecond, revoked and orphaned tokens die at once, each token works
 * only where it belongs, and another organisation's ids are indistinguishable
 * from missing ones.
 */
import test from 'ava';
import { ADMIN_TOKEN, createCredential, createOrg, mintToken } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { adversary, call, canary, isError, rawRequest, type Adversary } from './_harness.js';

/** Every admin endpoint that takes an org token, with a body where it needs one. */
function adminEndpoints(a: Adversary): Array<[string, string, unknown?]> {
  const cred = a.credentials.openai;
  const tok = a.tokens.openai.id;
  return [
    ['GET', '/v1/credentials'],
    ['POST', '/v1/credentials', { provider: 'openai', api_key: 'sk-would-be-stored-0001' }],
    ['GET', `/v1/credentials/${cred}`],
    ['POST', `/v1/credentials/${cred}/rotate`, { api_key: 'sk-would-be-rotated-0001' }],
    ['DELETE', `/v1/credentials/${cred}`],
    ['GET', '/v1/tokens'],
    ['POST', '/v1/tokens', { credential_id: cred, ttl: '1m' }],
    ['GET', `/v1/tokens/${tok}`],
    ['DELETE', `/v1/tokens/${tok}`],
    ['GET', '/v1/usage'],
    ['GET', '/v1/audit'],
    ['POST', '/v1/orgs/self/token/rotate', { grace_s: 0 }],
  ];
}

/** A well-formed token with one character of its body changed: the checksum no longer matches. */
function wrongChecksum(token: string): string {
  const i = token.length - 10;
  return token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
}

test('malformed proxy tokens → 401 invalid_token naming the place, never the value, wherever they are presented; nothing forwarded', async (t) => {
  const a = await adversary(t);
  const good = a.tokens.openai.token;
  const url = a.proxyUrl('v1/models');
  const reference = await call(a.w, url);
  isError(t, reference, 401, 'invalid_token', 'no token at all');
  const bad = [
    '', 'ptok_', 'ptok', 'PTOK_', 'ptok_' + 'A'.repeat(10 * 1024), `ptok_${'A'.repeat(38)}`, wrongChecksum(good),
    good.toUpperCase(), good.replace('ptok_', 'PTOK_'), good.replace('ptok_', 'Ptok_'), good.replace('ptok_', 'otok_'),
    good.slice(0, -1), good + 'A', ` ${good}x`, `${good},${good}`, `${good}, ${good}`, 'null', 'undefined', '[object Object]',
    'ptok_../../etc/passwd', "ptok_' OR '1'='1", '%70tok_' + good.slice(5), a.org.token, ADMIN_TOKEN, a.keys.openai,
  ];
  const placements = (v: string): Array<[string, RequestInit, string?]> => [
    ['x-proxy-token', { headers: { 'x-proxy-token': v } }],
    ['authorization', { headers: { authorization: `Bearer ${v}` } }],
    ['x-api-key', { headers: { 'x-api-key': v } }],
    ['x-goog-api-key', { headers: { 'x-goog-api-key': v } }],
    ['?key=', {}, `?key=${encodeURIComponent(v)}`],
  ];
  // The message names the place and what was there, never the value; a ptok_-looking value that is not a token gets one
  // answer wherever its fault lies (checksum, length, unknown), so a refusal is no oracle.
  const lookalikes = new Set([wrongChecksum(good), good.slice(0, -1), good + 'A', `ptok_${'A'.repeat(38)}`]);
  const byPlace = new Map<string, Set<string>>();
  let n = 0;
  for (const v of bad) {
    for (const [where, init, query] of placements(v)) {
      const r = await call(a.w, url + (query ?? ''), init);
      isError(t, r, 401, 'invalid_token', `${where} ${JSON.stringify(v.slice(0, 40))}`);
      const message = r.body?.error?.message as string;
      if (v.length >= 8) t.false(message.includes(v) || message.includes(v.slice(5, 20)), `${where}: the value is never echoed`);
      t.is(r.headers.get('www-authenticate'), 'Bearer realm="keyward"');
      if (lookalikes.has(v)) (byPlace.get(where) ?? byPlace.set(where, new Set()).get(where)!).add(message);
      n++;
    }
  }
  for (const [where, messages] of byPlace) t.is(messages.size, 1, `${where}: one answer for every lookalike: ${[...messages].join(' | ')}`);
  // Bearer spacing and scheme games around a good token: refused unless exactly `Bearer <token>` (scheme in any case).
  for (const v of [`Bearer  ${good}`, `Bearer\t${good}`, `Bearer${good}`, `Bearer: ${good}`, `Basic ${good}`, `Token ${good}`, good, `Bearer ${good} x`, `Bearer ${good} ${good}`]) {
    const r = await call(a.w, url, { headers: { authorization: v } });
    isError(t, r, 401, 'invalid_token', JSON.stringify(v));
  }
  // Unicode and raw bytes fetch will not send: on a raw socket.
  for (const v of ['ptok_é', 'ptok_\u{1F600}', `${good.slice(0, -1)}é`, 'ptok_\u0130']) {
    const r = await rawRequest(a.app.port, Buffer.from(`GET /v1/proxy/v1/models HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${v}\r\nConnection: close\r\n\r\n`, 'utf8'), { w: a.w });
    isError(t, r, 401, 'invalid_token', JSON.stringify(v));
  }
  // A doubled header: ambiguous, so refused, whichever copy is the good one.
  for (const [h1, h2] of [[good, 'ptok_bad'], ['ptok_bad', good], [good, good]]) {
    for (const name of ['X-Proxy-Token', 'Authorization', 'X-Api-Key']) {
      const value = (v: string) => (name === 'Authorization' ? `Bearer ${v}` : v);
      const r = await rawRequest(a.app.port, `GET /v1/proxy/v1/models HTTP/1.1\r\nHost: x\r\n${name}: ${value(h1!)}\r\n${name}: ${value(h2!)}\r\nConnection: close\r\n\r\n`, { w: a.w });
      isError(t, r, 401, 'invalid_token', `doubled ${name} ${h1 === good ? 'good first' : 'good second'}`);
    }
  }
  for (const q of [`?key=${good}&key=ptok_bad`, `?key=ptok_bad&key=${good}`, `?key=${good}&key=${good}`]) {
    isError(t, await call(a.w, a.proxyUrl('v1beta/models') + q), 401, 'invalid_token', 'a repeated key parameter');
  }
  t.true(n > 100);
  t.is(a.fake.received.length, 0, 'nothing reached the provider');
  // The good token still works, in every placement.
  for (const [where, init, query] of placements(good)) t.is((await call(a.w, url + (query ?? ''), init)).status, 200, where);
  t.is((await call(a.w, url, { headers: { authorization: `bearer ${good}` } })).status, 200, 'the scheme is case-insensitive');
  a.assertNoLeaks(t, { tokens: [] });
});

test('malformed org tokens → one uniform 401 unauthenticated on every admin endpoint; never a 500', async (t) => {
  const a = await adversary(t);
  const good = a.org.token;
  const reference = await call(a.w, `${a.app.url}/v1/credentials`);
  isError(t, reference, 401, 'unauthenticated', 'no token');
  const bad = [
    '', 'Bearer', 'Bearer ', 'Bearer otok_', `Bearer ${'otok_' + 'A'.repeat(10 * 1024)}`, `Bearer ${wrongChecksum(good)}`,
    `Bearer ${good.toUpperCase()}`, `Bearer ${good.replace('otok_', 'OTOK_')}`, `Bearer ${good.replace('otok_', 'ptok_')}`,
    `Bearer  ${good}`, `Bearer\t${good}`, `Bearer${good}`, good, `Basic ${Buffer.from(`${good}:`).toString('base64')}`,
    `Bearer ${good} ${good}`, `Bearer ${good},${good}`, `Bearer ${a.tokens.openai.token}`, `Bearer ${a.keys.openai}`, `Bearer ${good.slice(0, -1)}`,
  ];
  for (const [method, path, body] of adminEndpoints(a)) {
    for (const v of bad) {
      const r = await call(a.w, a.app.url + path, { method, headers: { authorization: v, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
      isError(t, r, 401, 'unauthenticated', `${method} ${path} ${JSON.stringify(v.slice(0, 40))}`);
      t.is(r.body?.error?.message, reference.body.error.message);
    }
  }
  for (const v of ['otok_é', `${good.slice(0, -1)}\u00ff`]) {
    const r = await rawRequest(a.app.port, Buffer.from(`GET /v1/credentials HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${v}\r\nConnection: close\r\n\r\n`, 'utf8'), { w: a.w });
    isError(t, r, 401, 'unauthenticated', JSON.stringify(v));
  }
  for (const [h1, h2] of [[good, 'otok_bad'], ['otok_bad', good], [good, good]]) {
    const r = await rawRequest(a.app.port, `GET /v1/credentials HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h1}\r\nAuthorization: Bearer ${h2}\r\nConnection: close\r\n\r\n`, { w: a.w });
    isError(t, r, 401, 'unauthenticated', `doubled Authorization ${h1 === good ? 'good first' : 'good second'}`);
  }
  // Nothing changed: the credential and token are still there; the good token works, scheme in any case.
  const list = await call(a.w, `${a.app.url}/v1/credentials`, { headers: { authorization: `BEARER ${good}` } });
  t.is(list.status, 200);
  t.is(list.body.data.length, 3);
  t.is((await call(a.w, `${a.app.url}/v1/tokens/${a.tokens.openai.id}`, { headers: { authorization: `Bearer ${good}` } })).status, 200);
  a.assertNoLeaks(t);
});

test('NUL and control bytes in a header name or value → 400 bad_request JSON from the client-error handler; nothing forwarded', async (t) => {
  const a = await adversary(t);
  const tok = a.tokens.openai.token;
  const targets = ['GET /v1/proxy/v1/models', 'POST /v1/proxy/v1/chat/completions', 'GET /v1/credentials', 'POST /v1/orgs'];
  const headerLines = [
    `X-Proxy-Token: ${tok}\x00`, `X-Proxy-Token: \x00${tok}`, `Authorization: Bearer ${a.org.token}\x00x`, 'X-Custom: a\x00b',
    'X-Custom: a\x01b', 'X-Custom: a\x1bb', 'X-Custom: a\x7fb', 'X-Custom: a\x0bb', 'X-Custom: a\x0cb', 'X-Cu\x00stom: a', 'X-Cu\x01stom: a',
    'X-Custom\x00: a', '\x00: a', 'X-Custom: a\rb', 'X-Custom: a\nb',
  ];
  // The server answers and closes: waited for with a generous bound (a busy machine is slow), never raced.
  const waitMs = 30_000;
  for (const target of targets) {
    for (const line of headerLines) {
      const r = await rawRequest(a.app.port, `${target} HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\n${line}\r\nContent-Length: 2\r\n\r\n{}`, { w: a.w, waitMs });
      const label = `${target} ${JSON.stringify(line)}`;
      isError(t, r, 400, 'bad_request', label);
      t.regex(r.headers['content-type'] ?? '', /^application\/json/, label);
      t.true(r.closed, `${label}: the connection is closed`);
    }
  }
  // NUL or controls in the request target itself.
  for (const target of ['GET /v1/proxy/v1/mod\x00els', 'GET /v1/proxy/v1/models\x01', 'GET /v1/creden\x00tials', 'GET /v1/proxy/v1/models?x=\x00']) {
    const r = await rawRequest(a.app.port, `${target} HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\n\r\n`, { w: a.w, waitMs });
    isError(t, r, 400, 'bad_request', JSON.stringify(target));
  }
  t.is(a.fake.received.length, 0);
  a.assertNoLeaks(t);
});

test('expiry is exact: valid at expires_at − 1 ms, refused at expires_at (proxy, cached or not, and the listing)', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 12, 0, 0, 250));
  const a = await adversary(t, { clock });
  const auth = { authorization: `Bearer ${a.org.token}`, 'content-type': 'application/json' };
  for (const [ttl, ms] of [['1s', 1000], ['90s', 90_000], ['2h', 7_200_000], ['30d', 30 * 86_400_000]] as const) {
    const minted = await call(a.w, `${a.app.url}/v1/tokens`, { method: 'POST', headers: auth, body: JSON.stringify({ credential_id: a.credentials.openai, ttl }) });
    a.w.seen.pop();
    t.is(minted.status, 201);
    const expiresAt = Date.parse(minted.body.expires_at);
    t.is(expiresAt, clock.now() + ms, ttl);
    const start = clock.now();
    const proxied = () => call(a.w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': minted.body.token } });
    const status = async () => (await call(a.w, `${a.app.url}/v1/tokens/${minted.body.id}`, { headers: auth })).body.status;
    t.is((await proxied()).status, 200, `${ttl}: fresh`);
    clock.set(expiresAt - 1);
    t.is((await proxied()).status, 200, `${ttl}: expires_at - 1 ms (cached)`);
    t.is(await status(), 'active');
    clock.set(expiresAt);
    isError(t, await proxied(), 401, 'invalid_token', `${ttl}: at expires_at`);
    t.is(await status(), 'expired');
    clock.set(expiresAt + 86_400_000);
    isError(t, await proxied(), 401, 'invalid_token', `${ttl}: long after`);
    // Back before expiry: an uncached lookup of the same token is valid again (the clock decides, not a flag).
    clock.set(expiresAt - 1);
    t.is((await proxied()).status, 200, `${ttl}: the rule is now < expires_at, nothing else`);
    clock.set(start);
  }
  a.assertNoLeaks(t);
});

test('revoked tokens and tokens of a deleted credential → 401 at once, even when cached; their ids → 404', async (t) => {
  const a = await adversary(t);
  const auth = { authorization: `Bearer ${a.org.token}` };
  const use = (token: string) => call(a.w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': token } });
  // Warm the caches, then revoke.
  const revoked = await mintToken(a.app, a.org, a.credentials.openai, '1h');
  t.is((await use(revoked.token)).status, 200);
  t.is((await call(a.w, `${a.app.url}/v1/tokens/${revoked.id}`, { method: 'DELETE', headers: auth })).status, 200);
  isError(t, await use(revoked.token), 401, 'invalid_token', 'revoked');
  isError(t, await call(a.w, `${a.app.url}/v1/tokens/${revoked.id}`, { method: 'DELETE', headers: auth }), 404, 'not_found', 'revoked twice');
  // A credential with two tokens, both used; deleting the credential kills both.
  const key = canary('doomed');
  const doomed = await createCredential(a.app, a.org, 'openai', key);
  const t1 = await mintToken(a.app, a.org, doomed, '1h');
  const t2 = await mintToken(a.app, a.org, doomed, '1h');
  t.is((await use(t1.token)).status, 200);
  t.is((await use(t2.token)).status, 200);
  t.is((await call(a.w, `${a.app.url}/v1/credentials/${doomed}`, { method: 'DELETE', headers: auth })).status, 200);
  for (const tok of [t1, t2]) {
    isError(t, await use(tok.token), 401, 'invalid_token', 'orphaned');
    isError(t, await call(a.w, `${a.app.url}/v1/tokens/${tok.id}`, { headers: auth }), 404, 'not_found');
  }
  // The revoked and orphaned tokens never reached the provider after their end.
  const withKey = a.fake.received.filter((r) => r.headers.authorization === `Bearer ${key}`);
  t.is(withKey.length, 2);
  // Other tokens are untouched.
  t.is((await use(a.tokens.openai.token)).status, 200);
  a.assertNoLeaks(t, { canaries: [key], tokens: [revoked.token, t1.token, t2.token] });
});

test('a proxy token on the admin API, an org or admin token on the proxy → 401', async (t) => {
  const a = await adversary(t);
  const ptok = a.tokens.openai.token;
  for (const [method, path, body] of adminEndpoints(a)) {
    for (const headers of [{ authorization: `Bearer ${ptok}` }, { 'x-proxy-token': ptok }, { authorization: `Bearer ${ptok}`, 'x-proxy-token': ptok }]) {
      const r = await call(a.w, a.app.url + path, { method, headers: { ...headers, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
      isError(t, r, 401, 'unauthenticated', `${method} ${path} ${Object.keys(headers).join('+')}`);
    }
  }
  // A proxy token cannot create organisations either.
  isError(t, await call(a.w, `${a.app.url}/v1/orgs`, { method: 'POST', headers: { authorization: `Bearer ${ptok}`, 'content-type': 'application/json' }, body: '{"name":"x"}' }), 401, 'unauthenticated');
  // Org and admin tokens on the proxy, in every place a token is accepted.
  for (const tok of [a.org.token, ADMIN_TOKEN]) {
    for (const [init, query] of [
      [{ headers: { 'x-proxy-token': tok } }, ''], [{ headers: { authorization: `Bearer ${tok}` } }, ''],
      [{ headers: { 'x-api-key': tok } }, ''], [{ headers: { 'x-goog-api-key': tok } }, ''], [{}, `?key=${tok}`],
    ] as Array<[RequestInit, string]>) {
      for (const path of ['v1/models', 'v1/chat/completions', 'v1beta/models']) {
        const r = await call(a.w, a.proxyUrl(path) + query, { ...init, method: path === 'v1/chat/completions' ? 'POST' : 'GET' });
        isError(t, r, 401, 'invalid_token', `${path} ${JSON.stringify(init)}${query}`);
      }
    }
  }
  t.is(a.fake.received.length, 0);
  // Nothing was changed by the refused admin calls.
  const list = await call(a.w, `${a.app.url}/v1/credentials`, { headers: { authorization: `Bearer ${a.org.token}` } });
  t.is(list.body.data.length, 3);
  a.assertNoLeaks(t, { tokens: [ADMIN_TOKEN] });
});

test("organisation A's token on organisation B's ids → 404, byte for byte the body of a missing id; B's data untouched", async (t) => {
  const a = await adversary(t);
  const b = await createOrg(a.app, 'victim');
  const bKey = canary('victim');
  const bCred = await createCredential(a.app, b, 'openai', bKey);
  const bTok = await mintToken(a.app, b, bCred, '1h');
  const missingCred = 'cred_' + 'A'.repeat(24);
  const missingTok = 'tok_' + 'A'.repeat(24);
  const as = (token: string, method: string, path: string, body?: unknown) =>
    call(a.w, a.app.url + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  const pairs: Array<[string, (id: string) => string, string, string, unknown?]> = [
    ['GET', (id) => `/v1/credentials/${id}`, bCred, missingCred],
    ['POST', (id) => `/v1/credentials/${id}/rotate`, bCred, missingCred, { api_key: 'sk-attacker-key-000001' }],
    ['DELETE', (id) => `/v1/credentials/${id}`, bCred, missingCred],
    ['GET', (id) => `/v1/tokens/${id}`, bTok.id, missingTok],
    ['DELETE', (id) => `/v1/tokens/${id}`, bTok.id, missingTok],
  ];
  for (const [method, path, theirs, missing, body] of pairs) {
    const foreign = await as(a.org.token, method, path(theirs), body);
    const absent = await as(a.org.token, method, path(missing), body);
    isError(t, foreign, 404, 'not_found', `${method} ${path(theirs)}`);
    t.is(foreign.text, absent.text, `${method}: the same bytes as a missing id`);
  }
  // Minting on B's credential, paging after B's ids.
  const mintForeign = await as(a.org.token, 'POST', '/v1/tokens', { credential_id: bCred, ttl: '1m' });
  const mintMissing = await as(a.org.token, 'POST', '/v1/tokens', { credential_id: missingCred, ttl: '1m' });
  isError(t, mintForeign, 404, 'not_found');
  t.is(mintForeign.text, mintMissing.text);
  for (const [list, theirs, missing] of [['credentials', bCred, missingCred], ['tokens', bTok.id, missingTok]] as const) {
    const foreign = await as(a.org.token, 'GET', `/v1/${list}?starting_after=${theirs}`);
    const absent = await as(a.org.token, 'GET', `/v1/${list}?starting_after=${missing}`);
    t.is(foreign.status, 400);
    t.is(foreign.text, absent.text);
  }
  // A's lists hold none of B's ids; B's credential, key and token are intact and work.
  const aList = await as(a.org.token, 'GET', '/v1/credentials?limit=100');
  t.false(aList.text.includes(bCred));
  t.false((await as(a.org.token, 'GET', '/v1/tokens?limit=100')).text.includes(bTok.id));
  const bGet = await as(b.token, 'GET', `/v1/credentials/${bCred}`);
  t.is(bGet.status, 200);
  t.is(bGet.body.key_hint, `…${bKey.slice(-4)}`);
  t.is((await call(a.w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': bTok.token } })).status, 200);
  t.is(a.fake.received.at(-1)!.headers.authorization, `Bearer ${bKey}`);
  t.false(a.fake.received.some((r) => r.headers.authorization === 'Bearer sk-attacker-key-000001'));
  a.assertNoLeaks(t, { canaries: [bKey], tokens: [b.token, bTok.token] });
});
