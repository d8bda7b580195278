/**
 * Providers that declare how they authenticate, added as files outside src/
 * (test/support/providers/, copied into KEYWARD_PROVIDERS_DIR):
 *  - `meter`: its SDK sends the key in `x-meter-key` (no built-in provider's header) and its
 *    responses report usage as `{"meter":{"in":…,"out":…}}`, read by the file's own reader;
 *  - `hmacco`: each request signed with HMAC-SHA256 over the exact body bytes from two secret
 *    fields, by the file's own signer; the fake upstream recomputes it and refuses a bad one.
 * End to end through the gateway: token discovery and header hygiene follow the loaded
 * providers, both secrets are masked, the body a signer reads stays within KEYWARD_MAX_BODY and
 * the buffer budget, and a credential's fields are checked against the declaration.
 */
import test, { type ExecutionContext } from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { api, createCredential, createOrg, mintToken, startApp, type Org, type TestApp } from '../support/app.js';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.js';
import { EXAMPLE_PROVIDERS, providersDir } from '../support/providers-dir.js';
import { request } from '../support/request.js';
import { quiet } from '../support/wait.js';

const { signature } = (await import(path.join(EXAMPLE_PROVIDERS, 'hmacco.js'))) as { signature(secret: string, method: string, target: string, body: Buffer | string): string };

interface Setup {
  app: TestApp;
  fake: FakeProvider;
  org: Org;
}

async function gateway(t: ExecutionContext, examples: string[], env: Record<string, string> = {}): Promise<Setup> {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const upstreams = Object.fromEntries(['openai', ...examples].map((id) => [`KEYWARD_UPSTREAM_${id.toUpperCase()}`, fake.url]));
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, examples), ...upstreams, ...env } });
  return { app, fake, org: await createOrg(app) };
}

async function tokenUsage(s: Setup, tokenId: string): Promise<unknown> {
  return (await api(s.app, 'GET', `/v1/tokens/${tokenId}`, { token: s.org.token })).body.usage;
}

test('a provider file whose SDK sends the key in its own header, with its own usage shape: proxied, the caller\'s header stripped, usage read by its reader', async (t) => {
  const s = await gateway(t, ['meter']);
  s.fake.handler = (_req: IncomingMessage, res: ServerResponse) => {
    // The usage object split over writes, so the reader sees it only across chunks.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"result":"ok","met');
    res.write('er":{"in":12,');
    res.end('"out":34}}');
  };
  const key = 'meter-secret-key-0123456789';
  const cred = await createCredential(s.app, s.org, 'meter', key);
  const tok = await mintToken(s.app, s.org, cred);

  // The token where the provider's SDK puts a key: accepted because the loaded file says so.
  const r = await request(`${s.app.url}/v1/proxy/v1/run`, { headers: { 'x-meter-key': tok.token }, body: '{"input":"hi"}' });
  t.is(r.status, 200, r.text);
  t.deepEqual(r.body, { result: 'ok', meter: { in: 12, out: 34 } });
  const got = s.fake.received.at(-1)!;
  t.is(got.url, '/v1/run');
  t.is(got.headers['x-meter-key'], key, 'the stored key, in the provider file\'s header');
  t.false(JSON.stringify(got.rawHeaders).includes(tok.token), 'the caller\'s token never reaches upstream');
  t.is(got.rawHeaders.filter((h) => h.toLowerCase() === 'x-meter-key').length, 1, 'exactly one credential upstream');
  await quiet(s.app);
  t.like(await tokenUsage(s, tok.id), { requests: 1, input_tokens: 12, output_tokens: 34 }, 'counted by the file\'s own reader');

  // The new carrier is one for every provider: an openai token presented there works, and the header,
  // a credential carrier now, never reaches upstream on any provider's request.
  s.fake.handler = undefined;
  const oaKey = 'sk-openai-beside-meter-01234';
  const oa = await mintToken(s.app, s.org, await createCredential(s.app, s.org, 'openai', oaKey));
  const chat = '{"model":"m","messages":[]}';
  t.is((await request(`${s.app.url}/v1/proxy/v1/chat/completions`, { headers: { 'x-meter-key': oa.token }, body: chat })).status, 200);
  t.is(s.fake.received.at(-1)!.headers.authorization, `Bearer ${oaKey}`);
  t.is(s.fake.received.at(-1)!.headers['x-meter-key'], undefined);
  t.is((await request(`${s.app.url}/v1/proxy/v1/chat/completions`, { headers: { 'x-proxy-token': oa.token, 'x-meter-key': 'meter-key-of-someone-else' }, body: chat })).status, 200);
  t.is(s.fake.received.at(-1)!.headers['x-meter-key'], undefined, 'stripped whatever the provider');

  // A gateway without the file neither accepts a token there nor knows the shape.
  const plain = await startApp(t, { env: { KEYWARD_UPSTREAM_OPENAI: s.fake.url } });
  const org2 = await createOrg(plain);
  const oa2 = await mintToken(plain, org2, await createCredential(plain, org2, 'openai', oaKey));
  const refused = await request(`${plain.url}/v1/proxy/v1/chat/completions`, { headers: { 'x-meter-key': oa2.token }, body: chat });
  t.is(refused.status, 401);
  t.is(refused.body.error.code, 'invalid_token');
});

/** The fake HMAC provider: checks key id, signature and framing; answers with usage and an echo of both secrets. */
function hmacUpstream(fake: FakeProvider, expect: { keyId: string; secret: string }): void {
  fake.handler = (req, res, body) => {
    const sig = signature(expect.secret, req.method ?? '', req.url ?? '', Buffer.from(body, 'utf8'));
    const framed = req.headers['content-length'] === String(Buffer.byteLength(body)) && req.headers['transfer-encoding'] === undefined;
    if (req.headers['x-hmac-key-id'] !== expect.keyId || req.headers['x-hmac-signature'] !== sig || !framed) {
      const text = JSON.stringify({ error: 'bad signature' });
      res.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    const text = JSON.stringify({ ok: true, seen_key_id: req.headers['x-hmac-key-id'], leaked: `${expect.keyId}:${expect.secret}`, usage: { prompt_tokens: 5, completion_tokens: 7 } });
    res.writeHead(200, 'OK ' + expect.secret, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-echo-key-id': expect.keyId });
    res.end(text);
  };
}

test('a provider file that signs each request with HMAC over the body from two secret fields: verified upstream, both secrets masked', async (t) => {
  const s = await gateway(t, ['hmacco']);
  const keyId = 'kid_AbCdEf0123456789';
  const secret = 'hmac-secret-0123456789abcdef';
  hmacUpstream(s.fake, { keyId, secret });

  const created = await api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: { provider: 'hmacco', key_id: keyId, key_secret: secret } });
  t.is(created.status, 201, created.text);
  t.is(created.body.key_hint, `…${secret.slice(-4)}`, 'key_hint from the main secret');
  t.false(created.text.includes(secret) || created.text.includes(keyId), 'no secret field is ever returned');
  const tok = await mintToken(s.app, s.org, created.body.id);
  const url = `${s.app.url}/v1/proxy/v1/chat/completions?mode=fast`;
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'héllo' }] });

  for (const chunked of [undefined, 7]) {
    const label = chunked ? 'chunked body' : 'content-length body';
    const r = await request(url, { headers: { authorization: `Bearer ${tok.token}` }, body, ...(chunked ? { chunked } : {}) });
    t.is(r.status, 200, `${label}: ${r.text}`);
    const got = s.fake.received.at(-1)!;
    t.is(got.body, body, `${label}: the exact bytes signed are the bytes sent`);
    t.is(got.headers['content-length'], String(Buffer.byteLength(body)), label);
    t.is(got.headers.authorization, undefined, `${label}: the caller's credential header never reaches upstream`);
    // Both secrets masked wherever the upstream echoes them: body, header, reason phrase.
    t.false(r.text.includes(secret) || r.text.includes(keyId), label);
    t.is(r.body.leaked, `${'*'.repeat(keyId.length)}:${'*'.repeat(secret.length)}`, label);
    t.is(r.body.seen_key_id, '*'.repeat(keyId.length), label);
    t.is(r.headers['x-echo-key-id'], '*'.repeat(keyId.length), label);
    t.false(JSON.stringify(r.rawHeaders).includes(secret), label);
    t.is(r.statusMessage, `OK ${'*'.repeat(secret.length)}`, `${label}: the reason phrase too`);
  }
  await quiet(s.app);
  t.like(await tokenUsage(s, tok.id), { requests: 2, input_tokens: 10, output_tokens: 14 });

  // A token whose scope reads the body's model: the scan's held bytes, then the rest, are what is signed and sent.
  const scoped = await mintToken(s.app, s.org, created.body.id, '15m', { models: ['m'] });
  for (const chunked of [undefined, 5]) {
    const r = await request(url, { headers: { authorization: `Bearer ${scoped.token}` }, body, ...(chunked ? { chunked } : {}) });
    t.is(r.status, 200, r.text);
    t.is(s.fake.received.at(-1)!.body, body);
  }
  const otherModel = await request(url, { headers: { authorization: `Bearer ${scoped.token}` }, body: body.replace('"m"', '"x"') });
  t.is(otherModel.status, 403);
  t.is(otherModel.body.error.code, 'model_not_allowed');

  // A credential whose secret is wrong is signed wrongly: the upstream refuses it.
  const wrong = await api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: { provider: 'hmacco', key_id: keyId, key_secret: 'not-the-right-secret-000' } });
  const wrongTok = await mintToken(s.app, s.org, wrong.body.id);
  const refused = await request(url, { headers: { authorization: `Bearer ${wrongTok.token}` }, body });
  t.is(refused.status, 401);
  t.deepEqual(refused.body, { error: 'bad signature' });

  // No secret field is in the store's files, in any form we can think of.
  const files = readdirSync(s.app.dataDir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile());
  for (const f of files) {
    const bytes = readFileSync(path.join(f.parentPath, f.name));
    for (const v of [secret, keyId]) t.false(bytes.includes(Buffer.from(v)), `${f.name} holds a secret`);
  }
  t.false(s.app.logText().includes(secret));
});

test('rotating a signing credential replaces its secrets together; plain fields are fixed; missing or unknown fields → 400 naming them', async (t) => {
  const s = await gateway(t, ['hmacco']);
  const keyId = 'kid_Rotate0123456789';
  const first = 'hmac-first-secret-0123456789';
  const created = await api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: { provider: 'hmacco', key_id: keyId, key_secret: first } });
  const tok = await mintToken(s.app, s.org, created.body.id);
  const url = `${s.app.url}/v1/proxy/v1/chat/completions`;
  const body = '{"model":"m","messages":[]}';
  hmacUpstream(s.fake, { keyId, secret: first });
  t.is((await request(url, { headers: { authorization: `Bearer ${tok.token}` }, body })).status, 200);

  const bad: Array<[string, Record<string, unknown>, string]> = [
    ['rotate', { key_secret: 'hmac-second-secret-0123456' }, 'key_id'],
    ['rotate', { key_id: keyId, key_secret: 'hmac-second-secret-0123456', api_key: 'sk-nope-0123456789' }, 'api_key'],
    ['rotate', { key_id: 'kid_bad id', key_secret: 'hmac-second-secret-0123456' }, 'key_id'],
    ['create', { provider: 'hmacco', key_secret: first }, 'key_id'],
    ['create', { provider: 'hmacco', key_id: keyId }, 'key_secret'],
    ['create', { provider: 'hmacco', key_id: keyId, key_secret: first, api_key: 'sk-nope-0123456789' }, 'api_key'],
    ['create', { provider: 'hmacco', key_id: 'kid_x', key_secret: first }, 'key_id'],
    ['create', { provider: 'hmacco', key_id: keyId, key_secret: 'short' }, 'key_secret'],
  ];
  for (const [kind, input, param] of bad) {
    const r = kind === 'rotate'
      ? await api(s.app, 'POST', `/v1/credentials/${created.body.id}/rotate`, { token: s.org.token, body: input })
      : await api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: input });
    const label = `${kind} ${JSON.stringify(input)}`;
    t.is(r.status, 400, label);
    t.is(r.body.error.code, 'invalid_request', label);
    t.is(r.body.error.param, param, label);
    t.true(r.body.error.message.includes(param), label);
    t.false(r.text.includes(first), label);
  }
  // A plain field cannot be changed by a rotation (it decides where and as whom the key acts).
  const oa = await api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: { provider: 'openai', api_key: 'sk-openai-rotate-plain-01', organization: 'org-one' } });
  const plainRotate = await api(s.app, 'POST', `/v1/credentials/${oa.body.id}/rotate`, { token: s.org.token, body: { api_key: 'sk-openai-rotate-plain-02', organization: 'org-two' } });
  t.is(plainRotate.status, 400);
  t.is(plainRotate.body.error.param, 'organization');

  const second = 'hmac-second-secret-0123456';
  const rotated = await api(s.app, 'POST', `/v1/credentials/${created.body.id}/rotate`, { token: s.org.token, body: { key_id: keyId, key_secret: second } });
  t.is(rotated.status, 200, rotated.text);
  t.is(rotated.body.key_hint, `…${second.slice(-4)}`);
  // The upstream now knows only the new secret: the same token works at once, signed with it.
  hmacUpstream(s.fake, { keyId, secret: second });
  t.is((await request(url, { headers: { authorization: `Bearer ${tok.token}` }, body })).status, 200);
});

test('the body a signer reads stays within KEYWARD_MAX_BODY (413) and the buffer budget (503 overloaded); nothing is sent or counted', async (t) => {
  const keyId = 'kid_Limits0123456789';
  const secret = 'hmac-limits-secret-0123456';
  const sized = (n: number): string => JSON.stringify({ model: 'm', pad: 'x'.repeat(n) });
  const setup = async (env: Record<string, string>) => {
    const s = await gateway(t, ['hmacco'], env);
    hmacUpstream(s.fake, { keyId, secret });
    const created = await api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: { provider: 'hmacco', key_id: keyId, key_secret: secret } });
    const tok = await mintToken(s.app, s.org, created.body.id);
    return { s, url: `${s.app.url}/v1/proxy/v1/chat/completions`, auth: { authorization: `Bearer ${tok.token}` } };
  };
  const used = async (s: Setup): Promise<number> => (await api(s.app, 'GET', '/v1/usage', { token: s.org.token })).body.proxy_requests.used;

  // A chunked body past the limit: refused while it is read, before the signer ran.
  const limited = await setup({ KEYWARD_MAX_BODY: '4kb' });
  t.is((await request(limited.url, { headers: limited.auth, body: sized(3000), chunked: 512 })).status, 200);
  const big = await request(limited.url, { headers: limited.auth, body: sized(6000), chunked: 512 });
  t.is(big.status, 413);
  t.is(big.body.error.code, 'payload_too_large');
  t.is(limited.s.fake.received.length, 1, 'nothing refused reached the upstream');
  t.is(await used(limited.s), 1, 'a refused request does not count');

  // Within the limit but past what the budget lets all requests hold: 503, whatever the framing.
  const budgeted = await setup({ KEYWARD_BUFFER_BUDGET: '3kb', KEYWARD_BUFFER_PER_ORG: '3kb' });
  t.is((await request(budgeted.url, { headers: budgeted.auth, body: sized(1000) })).status, 200);
  for (const chunked of [undefined, 512]) {
    const over = await request(budgeted.url, { headers: budgeted.auth, body: sized(3500), ...(chunked ? { chunked } : {}) });
    t.is(over.status, 503, `${chunked ? 'chunked' : 'declared'}: ${over.text}`);
    t.is(over.body.error.code, 'overloaded');
  }
  t.is(budgeted.s.fake.received.length, 1, 'nothing refused reached the upstream');
  t.is(await used(budgeted.s), 1, 'refused requests do not count');
  // The budget was given back: a body that fits goes through again.
  t.is((await request(budgeted.url, { headers: budgeted.auth, body: sized(2500) })).status, 200);
});

test('a provider that takes its key in a query parameter: the caller\'s token there is accepted and replaced by the stored key', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const source = "export default { apiVersion: 1, id: 'querykey', upstream: 'https://api.querykey.test', auth: { kind: 'query', param: 'api-key' }, routes: [{ method: 'GET', path: 'v1/models' }] };";
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, [], { 'querykey.js': source }), KEYWARD_UPSTREAM_QUERYKEY: fake.url } });
  const org = await createOrg(app);
  const key = 'query-secret-key+/=0123456';
  const tok = await mintToken(app, org, await createCredential(app, org, 'querykey', key));
  const r = await request(`${app.url}/v1/proxy/v1/models?x=1&api-key=${tok.token}`, { method: 'GET' });
  t.is(r.status, 200, r.text);
  t.is(fake.received.at(-1)!.url, `/v1/models?x=1&api-key=${encodeURIComponent(key)}`, 'exactly one key parameter upstream: the stored one');
  t.false(r.text.includes(key));
});
