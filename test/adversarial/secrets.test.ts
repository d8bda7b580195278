/**
 * Secrets: a canary key stored through the API never comes back out (nor its
 * base64 or hex forms), in any response, log line (debug level) or error, nor
 * in the raw bytes of the store's files; an upstream that echoes it has it
 * masked, however it is chunked; proxy and org tokens never appear after their
 * creation responses.
 */
import test from 'ava';
import http from 'node:http';
import { ADMIN_TOKEN } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { adversary, assertNoLeaks, call, canary, leakForms, rawRequest, request, storeBytes } from './_harness.js';
import { sleep } from '../support/wait.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

test('leakForms covers the exact key, hex and base64 at every alignment', (t) => {
  const secret = 'sk-test-0123456789abcdefXYZ';
  const forms = leakForms(secret);
  t.true(forms.includes(secret));
  t.true(forms.includes(Buffer.from(secret).toString('hex')));
  for (const prefix of ['', 'a', 'ab', 'abc', 'Bearer ', 'x:']) {
    for (const enc of ['base64', 'base64url'] as const) {
      const encoded = Buffer.from(prefix + secret + '!?').toString(enc);
      t.true(forms.some((f) => encoded.includes(f)), `${enc} after ${JSON.stringify(prefix)}`);
    }
  }
  const other = Buffer.from('sk-test-9876543210fedcbaQRS!?');
  t.false(forms.some((f) => other.toString('base64').includes(f) || other.toString('hex').includes(f)));
});

test('a canary key never leaves the gateway: every admin and proxy path, success and error, logs at debug, store files', async (t) => {
  const a = await adversary(t, { env: { KEYWARD_MAX_BODY: '64kb' } });
  const { app, org, w } = a;
  const auth = { authorization: `Bearer ${org.token}`, ...JSON_HEADERS };
  const rotated = canary('rotated');
  const deleted = canary('deleted');

  // Admin API: every endpoint, valid and invalid, with the canaries in play.
  const created = await call(w, `${app.url}/v1/credentials`, { method: 'POST', headers: auth, body: JSON.stringify({ provider: 'openai', api_key: deleted }) });
  t.is(created.status, 201);
  t.is(created.body.key_hint, `…${deleted.slice(-4)}`);
  await call(w, `${app.url}/v1/credentials`, { headers: auth });
  await call(w, `${app.url}/v1/credentials?limit=100`, { headers: auth });
  for (const id of Object.values(a.credentials)) await call(w, `${app.url}/v1/credentials/${id}`, { headers: auth });
  t.is((await call(w, `${app.url}/v1/credentials/${a.credentials.anthropic}/rotate`, { method: 'POST', headers: auth, body: JSON.stringify({ api_key: rotated }) })).status, 200);
  // The key in the wrong places: a swapped field, a bad ttl, a credential id, a cursor. (Error messages
  // may quote a caller's own names and paths; never a value that could be a key.)
  const misuse = [
    { provider: 'openai', api_key: 'sk-shrt' },
    { provider: 'nope', api_key: a.keys.openai },
    { provider: 'openai', api_key: `${a.keys.openai} with space` },
    { provider: 'openai', api_key: a.keys.openai + '\n' },
    { provider: 'openai', api_key: 12345678 },
  ];
  for (const body of misuse) {
    const r = await call(w, `${app.url}/v1/credentials`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
    t.true(r.status === 400 || r.status === 403, `${r.status} ${r.text}`);
  }
  await call(w, `${app.url}/v1/credentials`, { method: 'POST', headers: auth, body: `{"provider":"openai","api_key":"${a.keys.openai}"` });
  await call(w, `${app.url}/v1/credentials`, { method: 'POST', headers: auth, body: `{"api_key":"${a.keys.openai}",` + '['.repeat(100) });
  await call(w, `${app.url}/v1/credentials`, { method: 'POST', headers: auth, body: JSON.stringify({ provider: 'openai', api_key: a.keys.openai + 'x'.repeat(70_000) }) });
  await call(w, `${app.url}/v1/tokens`, { method: 'POST', headers: auth, body: JSON.stringify({ credential_id: a.credentials.openai, ttl: a.keys.openai }) });
  await call(w, `${app.url}/v1/tokens`, { method: 'POST', headers: auth, body: JSON.stringify({ credential_id: a.keys.openai, ttl: '1m' }) });
  await call(w, `${app.url}/v1/credentials/${encodeURIComponent(a.keys.openai)}`, { headers: auth });
  await call(w, `${app.url}/v1/credentials?starting_after=${encodeURIComponent(a.keys.openai)}`, { headers: auth });
  // The key presented as a token, anywhere.
  await call(w, `${app.url}/v1/credentials`, { headers: { authorization: `Bearer ${a.keys.openai}` } });
  await call(w, `${app.url}/v1/orgs`, { method: 'POST', headers: { authorization: `Bearer ${a.keys.openai}`, ...JSON_HEADERS }, body: JSON.stringify({ name: 'x' }) });
  await call(w, a.proxyUrl('v1/chat/completions'), { method: 'POST', headers: { 'x-proxy-token': a.keys.openai }, body: '{}' });
  await call(w, a.proxyUrl(`v1/models?key=${a.keys.gemini}`), {});
  await call(w, `${app.url}/v1/usage`, { headers: auth });

  // Proxy: success, upstream errors, echoing upstreams, gateway refusals, streaming.
  for (const [provider, path] of [['openai', 'v1/chat/completions'], ['anthropic', 'v1/messages'], ['gemini', 'v1beta/models/g:generateContent']] as const) {
    const tok = { 'x-proxy-token': a.tokens[provider].token, ...JSON_HEADERS };
    t.is((await call(w, a.proxyUrl(path), { method: 'POST', headers: tok, body: '{"model":"m","messages":[]}' })).status, 200);
    t.is((await call(w, a.proxyUrl(path), { method: 'POST', headers: { ...tok, 'x-fake-echo': '1' }, body: '{"model":"m"}' })).status, 200);
    t.is((await call(w, a.proxyUrl(path), { method: 'POST', headers: { ...tok, 'x-fake-echo': 'stream' }, body: '{"model":"m"}' })).status, 200);
    t.is((await call(w, a.proxyUrl(path), { method: 'POST', headers: { ...tok, 'x-fake-status': '401' }, body: '{}' })).status, 401);
    t.is((await call(w, a.proxyUrl(path), { method: 'POST', headers: { ...tok, 'x-fake-status': '500' }, body: '{}' })).status, 500);
    t.is((await call(w, a.proxyUrl(path.replace(/[a-z]+$/, 'nope')), { method: 'POST', headers: tok, body: '{}' })).status, 403);
    t.is((await call(w, a.proxyUrl(path), { method: 'POST', headers: tok, body: 'x'.repeat(70_000) })).status, 413);
  }
  // An upstream that answers the key as an error message (as some providers do with a bad key).
  a.fake.handler = (req, res) => {
    const text = JSON.stringify({ error: { message: `Incorrect API key provided: ${req.headers.authorization}` } });
    res.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const echoed401 = await call(w, a.proxyUrl('v1/chat/completions'), { method: 'POST', headers: { 'x-proxy-token': a.tokens.openai.token }, body: '{}' });
  t.is(echoed401.status, 401);
  t.true(echoed401.text.includes('*'.repeat(a.keys.openai.length)));
  a.fake.handler = undefined;
  // Deleting: the deleted credential's key is gone from the store's live pages too (secure_delete), and never shown.
  t.is((await call(w, `${app.url}/v1/credentials/${created.body.id}`, { method: 'DELETE', headers: auth })).status, 200);

  // Malformed HTTP carrying the key: refused by the client-error handler, logged at debug.
  const malformed = await rawRequest(app.port, `GET /v1/credentials HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.keys.openai}\x01\r\n\r\n`, { w });
  t.is(malformed.status, 400);
  await rawRequest(app.port, `POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${a.tokens.openai.token}\r\nX-Api-Key: ${a.keys.openai}\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}`, { w });

  a.assertNoLeaks(t, { canaries: [rotated, deleted] });
  t.true(a.app.logs.some((l) => l.severity === 'DEBUG'), 'debug logging was on');
  t.true(a.app.logs.filter((l) => l.message === 'proxy request').length >= 20);
  // Stopped: the WAL is checkpointed into the main file; still nothing.
  await app.stop();
  assertNoLeaks(t, { canaries: [...a.secrets().canaries, rotated, deleted], tokens: a.secrets().tokens }, { dataDir: app.dataDir, logs: app.logText() });
  t.true(storeBytes(app.dataDir).length > 4096, 'the store files were read');
});

/** An upstream that writes `parts` as separate chunks (flushing between them), with `headers`. */
function chunkedEcho(parts: Buffer[], status = 200, headers: Record<string, string> = {}, reason?: string) {
  return async (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (reason) res.writeHead(status, reason, headers);
    else res.writeHead(status, headers);
    res.flushHeaders();
    for (const p of parts) {
      res.write(p);
      await sleep(1); // pacing: each part leaves the fake as a chunk of its own
    }
    res.end();
  };
}

test('an echoing upstream: the key is masked in body, headers, header names and the reason phrase; split at every offset; content-length true', async (t) => {
  const a = await adversary(t);
  const key = a.keys.openai;
  const stars = '*'.repeat(key.length);
  const tok = { 'x-proxy-token': a.tokens.openai.token };
  const payload = `{"a":"${key}","b":"${key}${key}","c":"${key.slice(0, 12)}","d":"x${key}"}`;
  const expected = payload.split(key).join(stars);

  // Streamed (chunked): the payload split at every offset of the first key, and then one byte at a time.
  const first = payload.indexOf(key);
  for (let cut = first; cut <= first + key.length; cut += 3) {
    a.fake.handler = chunkedEcho([Buffer.from(payload.slice(0, cut)), Buffer.from(payload.slice(cut))], 200, { 'content-type': 'text/event-stream' });
    const r = await request(a.w, a.proxyUrl('v1/chat/completions'), { method: 'POST', headers: tok }, '{}');
    t.is(r.text, expected, `cut at ${cut}`);
  }
  a.fake.handler = chunkedEcho([...Buffer.from(payload)].map((b) => Buffer.from([b])));
  t.is((await request(a.w, a.proxyUrl('v1/chat/completions'), { method: 'POST', headers: tok }, '{}')).text, expected);

  // Not streamed: content-length stays true; the key in header values, a header name and the reason phrase.
  a.fake.handler = (_req, res) => {
    res.writeHead(200, `OK ${key}`, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(payload)),
      'x-echo-key': `Bearer ${key}`,
      [`x-${key}`]: 'named',
      location: `https://evil.test/?key=${key}&again=${key}`,
      'set-cookie': [`a=${key}`, 'b=2'],
    });
    res.end(payload);
  };
  const raw = await rawRequest(a.app.port, `POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${a.tokens.openai.token}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`, { w: a.w });
  t.is(raw.status, 200);
  t.is(raw.raw.indexOf(key), -1, `no exact key anywhere in the raw response: ${raw.raw}`);
  t.true(raw.raw.includes(`\r\nx-${stars}: named\r\n`), 'a header named after the key keeps its place, masked');
  t.true(raw.raw.startsWith(`HTTP/1.1 200 OK ${stars}\r\n`), 'the reason phrase is masked');
  t.deepEqual(raw.body, JSON.parse(expected));
  t.is(Number(raw.headers['content-length']), Buffer.byteLength(raw.raw.slice(raw.raw.indexOf('\r\n\r\n') + 4)));
  t.is(raw.headers['x-echo-key'], `Bearer ${stars}`);
  t.true(raw.headers.location!.includes(stars));

  // Gemini: the key echoed from the x-goog-api-key header, from a caller who sent ?key=<ptok>.
  a.fake.handler = undefined;
  const g = await call(a.w, a.proxyUrl(`v1beta/models/g:generateContent?key=${a.tokens.gemini.token}`), { method: 'POST', headers: { 'x-fake-echo': 'stream' }, body: '{}' });
  t.is(g.status, 200);
  t.true(g.text.includes('*'.repeat(a.keys.gemini.length)), g.text);
  a.assertNoLeaks(t);
});

test('a key at the very end of a stream, and a stream that ends on a partial key, come out whole and masked', async (t) => {
  const a = await adversary(t);
  const key = a.keys.anthropic;
  const tok = { 'x-proxy-token': a.tokens.anthropic.token };
  for (const tail of [key, key.slice(0, -1), key.slice(0, 5), key + key.slice(0, 9)]) {
    a.fake.handler = chunkedEcho([Buffer.from('data: '), Buffer.from(tail.slice(0, 7)), Buffer.from(tail.slice(7))]);
    const r = await request(a.w, a.proxyUrl('v1/messages'), { method: 'POST', headers: tok }, '{}');
    t.is(r.text, 'data: ' + tail.split(key).join('*'.repeat(key.length)));
  }
  a.assertNoLeaks(t);
});

test('proxy and org tokens never appear in logs, list or get responses, or errors', async (t) => {
  const clock = new ManualClock(Date.now());
  const a = await adversary(t, { clock });
  const { app, org, w } = a;
  const auth = { authorization: `Bearer ${org.token}` };
  // Extra tokens, some revoked, some expired soon.
  const more = [];
  for (let i = 0; i < 5; i++) {
    const r = await call(w, `${app.url}/v1/tokens`, { method: 'POST', headers: { ...auth, ...JSON_HEADERS }, body: JSON.stringify({ credential_id: a.credentials.openai, ttl: i === 0 ? '1s' : '1h', ...(i === 1 ? { max_requests: 1 } : {}) }) });
    t.is(r.status, 201);
    // The creation response is the one place a token is shown: keep it out of the witness.
    w.seen.pop();
    more.push(r.body as { id: string; token: string });
  }
  t.is((await call(w, `${app.url}/v1/tokens/${more[2]!.id}`, { method: 'DELETE', headers: auth })).status, 200);
  const list = await call(w, `${app.url}/v1/tokens?limit=100`, { headers: auth });
  t.is(list.status, 200);
  t.true(list.body.data.length >= 7);
  for (const item of list.body.data) t.is(item.token, undefined);
  for (const m of more) await call(w, `${app.url}/v1/tokens/${m.id}`, { headers: auth });
  await call(w, `${app.url}/v1/credentials`, { headers: auth });
  await call(w, `${app.url}/v1/usage`, { headers: auth });
  clock.advance(1000); // the 1s token expires (on the injected clock)
  // Tokens used right and wrong: on the proxy, on the admin API, in queries, doubled, truncated.
  const all = [a.tokens.openai.token, ...more.map((m) => m.token)];
  for (const tok of all) {
    await call(w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': tok } });
    await call(w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': tok } });
    await call(w, a.proxyUrl(`v1/models?key=${tok}`), {});
    await call(w, a.proxyUrl('v1/nope'), { headers: { authorization: `Bearer ${tok}` } });
    await call(w, `${app.url}/v1/credentials`, { headers: { authorization: `Bearer ${tok}` } });
    await call(w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': `${tok}, ${tok}` } });
    await call(w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': tok.slice(0, -1) } });
    await call(w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': tok + 'x' } });
  }
  // The org token used where it does not belong.
  await call(w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': org.token } });
  await call(w, a.proxyUrl('v1/models'), { headers: { authorization: `Bearer ${org.token}` } });
  await call(w, `${app.url}/v1/orgs`, { method: 'POST', headers: { authorization: `Bearer ${org.token}`, ...JSON_HEADERS }, body: '{"name":"x"}' });
  await call(w, `${app.url}/v1/credentials`, { headers: { authorization: `Bearer ${org.token}x` } });
  await call(w, `${app.url}/v1/credentials`, { headers: { authorization: `Basic ${Buffer.from(org.token + ':').toString('base64')}` } });
  // An upstream that echoes every header: the token never reached it, so it cannot echo it.
  await call(w, a.proxyUrl('v1/chat/completions'), { method: 'POST', headers: { authorization: `Bearer ${a.tokens.openai.token}`, 'x-fake-echo': '1' }, body: '{}' });
  for (const r of a.fake.received) t.false(JSON.stringify(r).includes('ptok_') || JSON.stringify(r).includes('otok_'), 'no token reached upstream');
  // The admin token, too, is a secret.
  await call(w, `${app.url}/v1/credentials`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  a.assertNoLeaks(t, { tokens: [...all, ADMIN_TOKEN] });
  t.true(app.logText().length > 1000, 'there were logs to search');
  // Random bytes never collide with the canary, so the check is not vacuous.
  t.true(a.w.text().includes('*'.repeat(a.keys.openai.length)));
});
