/**
 * Token scopes through real HTTP: models (body `model`, or Gemini's path
 * segment), paths, max_requests (exact under concurrency), rate_limit (token
 * bucket), impossible scopes refused at mint time, refusals that never count
 * against the organisation's quota, and scopes echoed on the token.
 */
import test from 'ava';
import http from 'node:http';
import { api, mintToken, startApp, tempDir } from '../support/app.js';
import { proxyFixture, type ProxyFixture } from '../support/proxy-fixture.js';
import { request, type Reply } from '../support/request.js';

const chat = (model?: string, extra: object = {}) => JSON.stringify({ ...(model !== undefined ? { model } : {}), messages: [{ role: 'user', content: 'hi' }], ...extra });

function tally(results: Reply[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    const k = r.status === 200 ? '200' : `${r.status} ${r.body?.error?.code}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

async function used(f: ProxyFixture): Promise<number> {
  return (await api(f.app, 'GET', '/v1/usage', { token: f.org.token })).body.proxy_requests.used;
}

function refusedWith(t: import('ava').ExecutionContext, r: Reply, status: number, type: string, code: string, label: string): void {
  t.is(r.status, status, label);
  t.is(r.body?.error?.type, type, label);
  t.is(r.body?.error?.code, code, label);
  t.regex(String(r.headers['x-keyward-request-id']), /^req_/, label);
}

test('models scope on OpenAI and Anthropic: the body model, exact or prefix*; others → 403 model_not_allowed', async (t) => {
  const f = await proxyFixture(t);
  const oa = await mintToken(f.app, f.org, f.credentials.openai, '15m', { models: ['gpt-4o', 'gpt-4.1*'] });
  const an = await mintToken(f.app, f.org, f.credentials.anthropic, '15m', { models: ['claude-sonnet-4*'] });
  const openai = (body: string) => request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': oa.token }, body: body });
  const anthropic = (body: string) => request(f.proxyUrl('v1/messages'), { headers: { 'x-api-key': an.token }, body: body });

  for (const model of ['gpt-4o', 'gpt-4.1', 'gpt-4.1-mini']) t.is((await openai(chat(model))).status, 200, model);
  for (const model of ['gpt-4o-mini', 'gpt-4', 'GPT-4O', 'gpt-5', 'o3', '']) refusedWith(t, await openai(chat(model)), 403, 'permission', 'model_not_allowed', JSON.stringify(model));
  refusedWith(t, await openai(chat()), 403, 'permission', 'model_not_allowed', 'no model');
  refusedWith(t, await openai(JSON.stringify({ model: ['gpt-4o'] })), 403, 'permission', 'model_not_allowed', 'model not a string');
  const notJson = await openai('model=gpt-4o');
  t.is(notJson.status, 400, 'a body that is not JSON cannot name a model');
  t.is(notJson.body.error.code, 'invalid_request');

  t.is((await anthropic(JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [] }))).status, 200);
  refusedWith(t, await anthropic(JSON.stringify({ model: 'claude-opus-4-1', max_tokens: 5, messages: [] })), 403, 'permission', 'model_not_allowed', 'anthropic');

  t.is(f.fake.received.length, 4, 'only allowed models reached the provider');
  // The body read for the check is forwarded byte for byte.
  const body = chat('gpt-4.1-mini', { stream: true, temperature: 0.5, note: 'ünïcode ✓' });
  const streamed = await openai(body);
  t.is(streamed.status, 200);
  t.true(streamed.text.includes('data: [DONE]'));
  t.is(f.fake.received.at(-1)!.body, body);
  t.is(await used(f), 5, 'refusals never count');
});

test('models scope on Gemini is checked against the model path segment, not the body', async (t) => {
  const f = await proxyFixture(t);
  const tok = await mintToken(f.app, f.org, f.credentials.gemini, '15m', { models: ['gemini-2.0-flash', 'gemini-2.5*'] });
  const gen = (model: string, action = 'generateContent', body = '{"contents":[]}') =>
    request(f.proxyUrl(`v1beta/models/${model}:${action}`), { headers: { 'x-goog-api-key': tok.token }, body: body });
  t.is((await gen('gemini-2.0-flash')).status, 200);
  t.is((await gen('gemini-2.5-pro', 'streamGenerateContent')).status, 200);
  refusedWith(t, await gen('gemini-1.5-pro'), 403, 'permission', 'model_not_allowed', 'other model');
  refusedWith(t, await gen('gemini-1.5-pro', 'generateContent', '{"model":"gemini-2.0-flash"}'), 403, 'permission', 'model_not_allowed', 'the body cannot override the path');
  refusedWith(t, await gen('gemini-2.0-flash-lite'), 403, 'permission', 'model_not_allowed', 'exact is exact');
  // Through ?key=, as the REST examples pass it.
  const viaKey = await request(`${f.proxyUrl('v1beta/models/gemini-1.5-pro:generateContent')}?key=${tok.token}`, { body: '{}' });
  refusedWith(t, viaKey, 403, 'permission', 'model_not_allowed', '?key=');
  // Gemini's OpenAI-compatible surface has no model segment: the body decides.
  const compat = (model: string) => request(f.proxyUrl('v1beta/openai/chat/completions'), { headers: { authorization: `Bearer ${tok.token}` }, body: chat(model) });
  t.is((await compat('gemini-2.0-flash')).status, 200);
  refusedWith(t, await compat('gemini-1.5-pro'), 403, 'permission', 'model_not_allowed', 'openai-compatible');
  t.deepEqual(f.fake.received.map((r) => r.url), [
    '/v1beta/models/gemini-2.0-flash:generateContent',
    '/v1beta/models/gemini-2.5-pro:streamGenerateContent',
    '/v1beta/openai/chat/completions',
  ]);
  t.is(await used(f), 3);
});

test('paths scope: only the listed paths (exact, route pattern or prefix*) → else 403 path_not_allowed', async (t) => {
  const f = await proxyFixture(t);
  const tok = await mintToken(f.app, f.org, f.credentials.openai, '15m', { paths: ['v1/embeddings', 'v1/responses*', 'v1/models/{model}', 'v1/responses/{id}'] });
  const h = { 'x-proxy-token': tok.token };
  t.is((await request(f.proxyUrl('v1/embeddings'), { headers: h, body: '{"model":"e","input":"x"}' })).status, 200);
  t.is((await request(f.proxyUrl('v1/responses'), { headers: h, body: '{"model":"m","input":"x"}' })).status, 200);
  // Stored responses are account-wide routes: reached only where a pattern names the route, never by the prefix.
  t.is((await request(f.proxyUrl('v1/responses/resp_1'), { method: 'GET', headers: h })).status, 200);
  refusedWith(t, await request(f.proxyUrl('v1/responses/resp_1/cancel'), { headers: h, body: '{}' }), 403, 'permission', 'path_not_allowed', 'account route under the prefix');
  t.is((await request(f.proxyUrl('v1/models/gpt-4o'), { method: 'GET', headers: h })).status, 200);
  refusedWith(t, await request(f.proxyUrl('v1/chat/completions'), { headers: h, body: chat('m') }), 403, 'permission', 'path_not_allowed', 'chat');
  refusedWith(t, await request(f.proxyUrl('v1/models'), { method: 'GET', headers: h }), 403, 'permission', 'path_not_allowed', 'models list');
  refusedWith(t, await request(f.proxyUrl('v1/moderations'), { headers: h, body: '{}' }), 403, 'permission', 'path_not_allowed', 'moderations');
  // The provider's allow-list still applies inside the scope's prefix.
  refusedWith(t, await request(f.proxyUrl('v1/responses/a/b'), { headers: h, body: '{}' }), 403, 'permission', 'path_not_allowed', 'off the provider list');
  t.is(f.fake.received.length, 4);
  t.is(await used(f), 4);
});

test('max_requests 10 under 100-way concurrency: exactly 10 forwarded, the rest 429 token_exhausted; none of those count', async (t) => {
  const f = await proxyFixture(t);
  const tok = await mintToken(f.app, f.org, f.credentials.openai, '15m', { max_requests: 10 });
  const results = await Promise.all(Array.from({ length: 100 }, () => request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': tok.token }, body: chat('m') })));
  t.deepEqual(tally(results), { '200': 10, '429 token_exhausted': 90 });
  t.is(f.fake.received.length, 10);
  for (const r of results.filter((x) => x.status === 429)) {
    t.is(r.body.error.type, 'rate_limit');
    t.regex(String(r.headers['retry-after']), /^[1-9][0-9]*$/);
  }
  const later = await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': tok.token }, body: chat('m') });
  refusedWith(t, later, 429, 'rate_limit', 'token_exhausted', 'later');
  t.is(await used(f), 10, 'exhausted requests never counted against the org quota');
  const view = await api(f.app, 'GET', `/v1/tokens/${tok.id}`, { token: f.org.token });
  t.is(view.body.usage.requests, 10);
  // Another token of the same credential is unaffected.
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token }, body: chat('m') })).status, 200);
});

test('max_requests: a request the org quota refuses does not use up the token (checked across a restart with a higher quota)', async (t) => {
  const dataDir = tempDir(t);
  const f = await proxyFixture(t, { dataDir, env: { KEYWARD_FREE_PROXY_REQUESTS: '3' } });
  const tok = await mintToken(f.app, f.org, f.credentials.openai, '1h', { max_requests: 5 });
  const call = (url: string) => request(`${url}/v1/proxy/v1/chat/completions`, { headers: { 'x-proxy-token': tok.token }, body: chat('m') });
  const first = [];
  for (let i = 0; i < 6; i++) first.push(await call(f.app.url));
  t.deepEqual(tally(first), { '200': 3, '429 quota_exceeded': 3 });
  await f.app.stop();
  // Same data, more quota: the token has exactly 5 - 3 = 2 requests left.
  const app2 = await startApp(t, { dataDir, env: { KEYWARD_FREE_PROXY_REQUESTS: '100', KEYWARD_UPSTREAM_OPENAI: f.fake.url } });
  const second = [];
  for (let i = 0; i < 4; i++) second.push(await call(app2.url));
  t.deepEqual(tally(second), { '200': 2, '429 token_exhausted': 2 });
  t.is(f.fake.received.length, 5);
});

test('rate_limit 60 per minute: 120 quick requests → about 60 pass, the rest 429 rate_limited with Retry-After; never counted', async (t) => {
  const f = await proxyFixture(t);
  const tok = await mintToken(f.app, f.org, f.credentials.openai, '15m', { rate_limit: 60 });
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: 120 }, () => request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': tok.token }, body: chat('m') })));
  const elapsedS = (performance.now() - started) / 1000;
  const counts = tally(results);
  const passed = counts['200'] ?? 0;
  // The bucket starts full (60) and refills at one a second while the burst lasts.
  t.true(passed >= 54 && passed <= Math.max(66, 60 + Math.ceil(elapsedS) + 1), `${passed} passed in ${elapsedS.toFixed(2)} s`);
  t.is(passed + (counts['429 rate_limited'] ?? 0), 120, JSON.stringify(counts));
  for (const r of results.filter((x) => x.status === 429)) {
    t.is(r.body.error.type, 'rate_limit');
    t.regex(String(r.headers['retry-after']), /^[1-9][0-9]*$/);
    t.true(Number(r.headers['retry-after']) <= 60);
  }
  t.is(f.fake.received.length, passed);
  t.is(await used(f), passed);
  // Another token of the same credential has its own budget (none).
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token }, body: chat('m') })).status, 200);
});

test('impossible or malformed scopes → 400 invalid_scope, and nothing is minted', async (t) => {
  const f = await proxyFixture(t);
  const before = (await api(f.app, 'GET', '/v1/tokens', { token: f.org.token })).body.data.length;
  const bad: Array<[string, Record<string, unknown>, string]> = [
    ['openai', { models: [] }, 'models'],
    ['openai', { models: 'gpt-4o' }, 'models'],
    ['openai', { models: [42] }, 'models'],
    ['openai', { models: null }, 'models'],
    ['openai', { paths: [] }, 'paths'],
    ['openai', { paths: ['v1/files'] }, 'paths'],
    ['openai', { paths: ['v1/messages'] }, 'paths'],
    ['openai', { paths: ['v1/../v1/chat/completions'] }, 'paths'],
    ['openai', { paths: ['v1/chat/completions/extra*'] }, 'paths'],
    ['openai', { paths: [{ path: 'v1/chat/completions' }] }, 'paths'],
    ['anthropic', { paths: ['v1/chat/completions'] }, 'paths'],
    ['gemini', { paths: ['v1beta/models/x:deleteAll'] }, 'paths'],
    ['openai', { max_requests: 0 }, 'max_requests'],
    ['openai', { max_requests: -1 }, 'max_requests'],
    ['openai', { max_requests: 2.5 }, 'max_requests'],
    ['openai', { max_requests: '10' }, 'max_requests'],
    ['openai', { max_requests: null }, 'max_requests'],
    ['openai', { rate_limit: 0 }, 'rate_limit'],
    ['openai', { rate_limit: -60 }, 'rate_limit'],
    ['openai', { rate_limit: 0.5 }, 'rate_limit'],
    ['openai', { rate_limit: true }, 'rate_limit'],
  ];
  for (const [provider, scopes, param] of bad) {
    const credential_id = f.credentials[provider as 'openai'];
    const r = await api(f.app, 'POST', '/v1/tokens', { token: f.org.token, body: { credential_id, ttl: '15m', ...scopes } });
    const label = `${provider} ${JSON.stringify(scopes)}`;
    t.is(r.status, 400, label);
    t.is(r.body?.error?.code, 'invalid_scope', label);
    t.is(r.body?.error?.type, 'invalid_request', label);
    t.is(r.body?.error?.param, param, label);
    t.is(r.body?.token, undefined, label);
  }
  t.is((await api(f.app, 'GET', '/v1/tokens', { token: f.org.token })).body.data.length, before);
});

test('scopes are echoed on creation, on GET /v1/tokens/:id and in the list; unscoped tokens show none', async (t) => {
  const f = await proxyFixture(t);
  const scopes = { models: ['gpt-4o', 'gpt-4.1*'], paths: ['v1/chat/completions', 'v1/responses*'], max_requests: 25, rate_limit: 120 };
  const created = await api(f.app, 'POST', '/v1/tokens', { token: f.org.token, body: { credential_id: f.credentials.openai, ttl: '1h', ...scopes } });
  t.is(created.status, 201);
  for (const [k, v] of Object.entries(scopes)) t.deepEqual(created.body[k], v, `created ${k}`);
  const got = await api(f.app, 'GET', `/v1/tokens/${created.body.id}`, { token: f.org.token });
  t.is(got.status, 200);
  for (const [k, v] of Object.entries(scopes)) t.deepEqual(got.body[k], v, `GET ${k}`);
  t.is(got.body.token, undefined, 'never the token value');
  const listed = (await api(f.app, 'GET', '/v1/tokens', { token: f.org.token })).body.data.find((x: any) => x.id === created.body.id);
  for (const [k, v] of Object.entries(scopes)) t.deepEqual(listed[k], v, `list ${k}`);
  const plain = await api(f.app, 'GET', `/v1/tokens/${f.tokens.openai.id}`, { token: f.org.token });
  for (const k of Object.keys(scopes)) t.false(k in plain.body, `unscoped: no ${k}`);
  // The echoed scopes are the ones enforced.
  const h = { 'x-proxy-token': created.body.token };
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: h, body: chat('gpt-4.1-nano') })).status, 200);
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: h, body: chat('gpt-3.5') })).body.error.code, 'model_not_allowed');
  t.is((await request(f.proxyUrl('v1/embeddings'), { headers: h, body: chat('gpt-4o') })).body.error.code, 'path_not_allowed');
});

test('scope refusals never count against the org quota: usage and x-keyward-quota-remaining', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_FREE_PROXY_REQUESTS: '100' } });
  const tok = await mintToken(f.app, f.org, f.credentials.openai, '15m', { models: ['gpt-4o'], paths: ['v1/chat/completions'], max_requests: 3, rate_limit: 1000 });
  const h = { 'x-proxy-token': tok.token };
  const ok1 = await request(f.proxyUrl('v1/chat/completions'), { headers: h, body: chat('gpt-4o') });
  t.is(ok1.headers['x-keyward-quota-remaining'], '99');
  const refused = await Promise.all([
    ...Array.from({ length: 10 }, () => request(f.proxyUrl('v1/chat/completions'), { headers: h, body: chat('gpt-5') })),
    ...Array.from({ length: 10 }, () => request(f.proxyUrl('v1/embeddings'), { headers: h, body: chat('gpt-4o') })),
  ]);
  t.deepEqual(tally(refused), { '403 model_not_allowed': 10, '403 path_not_allowed': 10 });
  const ok2 = await request(f.proxyUrl('v1/chat/completions'), { headers: h, body: chat('gpt-4o') });
  t.is(ok2.headers['x-keyward-quota-remaining'], '98');
  const ok3 = await request(f.proxyUrl('v1/chat/completions'), { headers: h, body: chat('gpt-4o') });
  t.is(ok3.headers['x-keyward-quota-remaining'], '97');
  const exhausted = await Promise.all(Array.from({ length: 5 }, () => request(f.proxyUrl('v1/chat/completions'), { headers: h, body: chat('gpt-4o') })));
  t.deepEqual(tally(exhausted), { '429 token_exhausted': 5 });
  t.is(await used(f), 3);
  const other = await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token }, body: chat('anything') });
  t.is(other.headers['x-keyward-quota-remaining'], '96');
  t.is(f.fake.received.length, 4);
});

test('a models-scoped token whose chunked body outgrows KEYWARD_MAX_BODY is refused with 413 before anything is forwarded or counted', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_MAX_BODY: '1kb' } });
  const tok = await mintToken(f.app, f.org, f.credentials.openai, '15m', { models: ['gpt-4o'] });
  const outcome = await new Promise<{ status?: number; body?: any; error?: string }>((resolve) => {
    const req = http.request(f.proxyUrl('v1/chat/completions'), {
      method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'x-proxy-token': tok.token, 'transfer-encoding': 'chunked' },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
      res.on('error', (e) => resolve({ status: res.statusCode, error: e.message }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
    req.write(`{"model":"gpt-4o","pad":"`);
    for (let i = 0; i < 8; i++) req.write('x'.repeat(256));
    req.end('"}');
  });
  if (outcome.status !== undefined) {
    t.is(outcome.status, 413);
    t.is(outcome.body?.error?.code, 'payload_too_large');
  } else {
    t.truthy(outcome.error);
  }
  t.is(f.fake.received.length, 0);
  t.is(await used(f), 0, 'never forwarded, so never counted');
  // A body within the limit still passes the same token.
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': tok.token }, body: chat('gpt-4o') })).status, 200);
});
