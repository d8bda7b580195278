/**
 * Vertex AI through the gateway, against fake Google token sources and a fake Vertex:
 * tokens minted once for a burst and refreshed once on expiry, ambient identity with no
 * secret stored, the path's project and location pinned to the credential's, usage from
 * usageMetadata and from Anthropic's shape, and credential validation.
 */
import test from 'ava';
import { api, mintToken } from '../support/app.js';
import { LOCATION, PROJECT, vertexFixture } from '../support/cloud/google-fixture.js';
import { ManualClock } from '../support/clocks.js';
import { quiet } from '../support/wait.js';

const GEMINI_BODY = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
const post = (url: string, token: string, body = GEMINI_BODY, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body });

test('200 concurrent requests on one service-account credential cause exactly one token mint', async (t) => {
  const f = await vertexFixture(t);
  const results = await Promise.all(Array.from({ length: 200 }, () => post(f.proxyUrl(f.geminiPath('generateContent')), f.tokens.sa.token).then(async (r) => [r.status, await r.text()] as const)));
  t.deepEqual([...new Set(results.map(([s]) => s))], [200], JSON.stringify(results.filter(([s]) => s !== 200).slice(0, 2)));
  t.is(f.google.mints, 1);
  t.deepEqual(f.google.refusals, []);
  t.is(f.vertex.received.length, 200);
  const auths = new Set(f.vertex.received.map((r) => r.headers.authorization));
  t.is(auths.size, 1);
  t.regex([...auths][0]!, /^Bearer ya29\.sa-/);
  // The assertion went to KEYWARD_GOOGLE_TOKEN_URI, although the key's token_uri is Google's.
  t.true(JSON.parse(f.sa.json).token_uri === 'https://oauth2.googleapis.com/token');
});

test('a token within a minute of its expiry is never sent: replaced once for a burst, then reused', async (t) => {
  const clock = new ManualClock(Date.now());
  const f = await vertexFixture(t, {}, clock);
  const tok = await mintToken(f.app, f.org, f.credentials.sa, '2h');
  t.is((await post(f.proxyUrl(f.geminiPath('generateContent')), tok.token)).status, 200);
  t.is(f.google.mints, 1);
  clock.advance((f.google.expiresIn - 59) * 1000);
  const burst = await Promise.all(Array.from({ length: 50 }, () => post(f.proxyUrl(f.geminiPath('generateContent')), tok.token).then((r) => r.status)));
  t.deepEqual([...new Set(burst)], [200]);
  t.is(f.google.mints, 2);
  t.is((await post(f.proxyUrl(f.geminiPath('countTokens')), tok.token)).status, 200);
  t.is(f.google.mints, 2);
  const last = f.vertex.received.at(-1)!.headers.authorization;
  t.not(last, f.vertex.received[0]!.headers.authorization, 'the refreshed token is used');
  t.true(f.vertex.received.slice(1).every((r) => r.headers.authorization === last), 'the old one was never sent within its last minute');
});

test('ambient: the metadata server\'s token, with no secret stored; its answer must say Metadata-Flavor: Google', async (t) => {
  const f = await vertexFixture(t);
  const rs = await Promise.all(Array.from({ length: 20 }, () => post(f.proxyUrl(f.geminiPath('generateContent')), f.tokens.ambient.token)));
  t.deepEqual([...new Set(rs.map((r) => r.status))], [200]);
  t.is(f.google.metadataMints, 1);
  t.is(f.google.mints, 0);
  const md = f.google.metadataRequests[0]!;
  t.is(md.headers['metadata-flavor'], 'Google');
  t.true(md.url.startsWith('/computeMetadata/v1/instance/service-accounts/default/token?scopes='));
  t.regex(String(f.vertex.received[0]!.headers.authorization), /^Bearer ya29\.md-/);
  const view = await api(f.app, 'GET', `/v1/credentials/${f.credentials.ambient}`, { token: f.org.token });
  t.is(view.status, 200);
  t.is(view.body.ambient, 'true');
});

test('ambient: only in a project the operator allowed (KEYWARD_AMBIENT_PROJECTS); elsewhere 403, no token asked for, nothing forwarded', async (t) => {
  // The default: no project, so an organisation cannot spend with the gateway's own identity wherever it reaches.
  const f = await vertexFixture(t, { KEYWARD_AMBIENT_PROJECTS: '' });
  const r = await post(f.proxyUrl(f.geminiPath('generateContent')), f.tokens.ambient.token);
  t.is(r.status, 403);
  t.is(((await r.json()) as { error: { code: string } }).error.code, 'path_not_allowed');
  t.is(f.google.metadataMints, 0);
  t.is(f.vertex.received.length, 0);
  // A service-account credential is unaffected: it acts as its own identity.
  t.is((await post(f.proxyUrl(f.geminiPath('generateContent')), f.tokens.sa.token)).status, 200);
});

test('ambient: a metadata answer without Metadata-Flavor: Google is refused (502, nothing forwarded)', async (t) => {
  const http = await import('node:http');
  const impostor = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token":"ya29.fake","expires_in":3599}'));
  await new Promise<void>((r) => impostor.listen(0, '127.0.0.1', r));
  t.teardown(() => impostor.close());
  const f = await vertexFixture(t, { GCE_METADATA_HOST: `127.0.0.1:${(impostor.address() as { port: number }).port}` });
  const r = await post(f.proxyUrl(f.geminiPath('generateContent')), f.tokens.ambient.token);
  t.is(r.status, 502);
  t.is(f.vertex.received.length, 0);
});

test('a project or location other than the credential\'s is 403 path_not_allowed, nothing forwarded', async (t) => {
  const f = await vertexFixture(t);
  for (const path of [
    f.geminiPath('generateContent', 'v1', 'other-proj-999'),
    f.geminiPath('generateContent', 'v1beta1', PROJECT, 'europe-west4'),
    f.geminiPath('generateContent', 'v1', PROJECT, 'global'),
    `v1/projects/other-proj-999/locations/${LOCATION}/endpoints/openapi/chat/completions`,
    `v1/projects/${PROJECT}/locations/${LOCATION}/publishers/google/models/gemini-2.5-flash:predictLongRunning`,
  ]) {
    const r = await post(f.proxyUrl(path), f.tokens.sa.token);
    t.is(r.status, 403, path);
    t.is(((await r.json()) as { error: { code: string } }).error.code, 'path_not_allowed', path);
  }
  t.is(f.vertex.received.length, 0);
  t.is(f.google.mints, 0);
});

test('every route reaches Vertex with the path unchanged; usage from usageMetadata and from Anthropic\'s shape', async (t) => {
  const f = await vertexFixture(t);
  const claude = `v1/projects/${PROJECT}/locations/${LOCATION}/publishers/anthropic/models/claude-sonnet-4@20250514`;
  const cases: Array<[string, string, number, number]> = [
    [f.geminiPath('generateContent'), GEMINI_BODY, 7, 3],
    [`${f.geminiPath('streamGenerateContent', 'v1beta1')}?alt=sse`, GEMINI_BODY, 7, 3],
    [`${claude}:rawPredict`, JSON.stringify({ anthropic_version: 'vertex-2023-10-16', max_tokens: 10, messages: [] }), 10, 2],
    [`${claude}:streamRawPredict`, JSON.stringify({ anthropic_version: 'vertex-2023-10-16', max_tokens: 10, stream: true, messages: [] }), 10, 2],
    [`v1/projects/${PROJECT}/locations/${LOCATION}/endpoints/openapi/chat/completions`, JSON.stringify({ model: 'google/gemini-2.5-flash', messages: [] }), 4, 3],
  ];
  for (const [path, body, input, output] of cases) {
    const token = await mintToken(f.app, f.org, f.credentials.sa);
    const r = await post(f.proxyUrl(path), token.token, body);
    t.is(r.status, 200, path);
    await r.text();
    t.is(f.vertex.received.at(-1)!.url, `/${path}`);
    await quiet(f.app); // usage is recorded when the response closes
    const view = await api(f.app, 'GET', `/v1/tokens/${token.id}`, { token: f.org.token });
    t.like(view.body.usage, { requests: 1, input_tokens: input, output_tokens: output }, path);
  }
});

test('Anthropic count-tokens:rawPredict: a models-scoped token is checked against the body\'s model', async (t) => {
  const f = await vertexFixture(t);
  const token = await mintToken(f.app, f.org, f.credentials.sa, '15m', { models: ['claude-sonnet-4@20250514'] });
  const path = `v1/projects/${PROJECT}/locations/${LOCATION}/publishers/anthropic/models/count-tokens:rawPredict`;
  const ok = await post(f.proxyUrl(path), token.token, JSON.stringify({ model: 'claude-sonnet-4@20250514', messages: [] }));
  t.is(ok.status, 200);
  t.deepEqual(await ok.json(), { input_tokens: 11 });
  const no = await post(f.proxyUrl(path), token.token, JSON.stringify({ model: 'claude-opus-4@20250514', messages: [] }));
  t.is(no.status, 403);
  t.is(((await no.json()) as { error: { code: string } }).error.code, 'model_not_allowed');
  t.is(f.vertex.received.length, 1);
});

test('credential validation: either a service-account key or ambient, strict project and location, Google\'s token_uri only', async (t) => {
  const f = await vertexFixture(t);
  const sa = JSON.parse(f.sa.json);
  const base = { provider: 'vertex', project: PROJECT, location: LOCATION };
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ ...base }, 'service_account'],
    [{ ...base, service_account: f.sa.json, ambient: 'true' }, 'ambient'],
    [{ ...base, ambient: 'yes' }, 'ambient'],
    [{ ...base, service_account: '{"type":"authorized_user"}' }, 'service_account'],
    [{ ...base, service_account: 'not json at all' }, 'service_account'],
    [{ ...base, service_account: JSON.stringify({ ...sa, private_key: undefined }) }, 'service_account'],
    [{ ...base, service_account: JSON.stringify({ ...sa, token_uri: 'https://evil.example/token' }) }, 'service_account'],
    [{ ...base, ambient: 'true', location: 'global' }, 'location'],
    [{ ...base, ambient: 'true', location: 'us-central1.evil.test' }, 'location'],
    [{ ...base, ambient: 'true', project: 'My Project' }, 'project'],
    [{ ...base, ambient: 'true', project: 'proj/../x' }, 'project'],
  ];
  for (const [body, field] of bad) {
    const r = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body });
    t.is(r.status, 400, JSON.stringify(body).slice(0, 120));
    t.is(r.body.error.param, field, JSON.stringify(body).slice(0, 120));
    t.false(r.text.includes(f.sa.privateKey.split('\n')[1]!), 'the key is never echoed');
  }
});
