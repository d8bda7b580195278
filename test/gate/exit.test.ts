/**
 * The exit (src/gateway/exit/exchange.ts): every way a proxied request ends passes one place. Each answer the
 * caller gets (a stage's refusal, the gate's, a chunked body cut off after forwarding began, a body the
 * scan refuses mid-flight, a signer's ApiError passed through as it is, a signer's crash, an unreachable
 * upstream, a proxied response) carries the stages' responseHead headers and x-keyward-request-id; a
 * counted request carries x-keyward-quota-remaining (issue 23: a 413 on a chunked body came back without
 * it); the stages' log hook runs exactly once per request; what was never forwarded is not counted.
 */
import test, { type ExecutionContext } from 'ava';
import { copyFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { api, createCredential, createOrg, mintToken, ROOT, startApp, tempDir, type TestApp } from '../support/app.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { providersDir } from '../support/providers-dir.js';
import { send, type Transport } from '../support/transport.js';
import { eventually } from '../support/wait.js';

const SIGNY = `import { ApiError } from ${JSON.stringify(path.join(ROOT, 'dist/src/errors.js'))};
export default {
  apiVersion: 1,
  id: 'signy',
  upstream: 'https://signy.test',
  auth: { kind: 'signer', signer: { needsBody: false, sign(request, credential) {
    const how = request.headers['x-sign-fail'];
    if (how === 'api') throw new ApiError(502, 'upstream', 'upstream_auth_failed', 'The cloud refused the exchange.');
    if (how === 'plain') throw new Error('signer broke holding ' + credential.secrets.api_key);
    request.headers.authorization = 'Bearer ' + credential.secrets.api_key;
  } } },
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  routes: [{ method: 'POST', path: 'v1/chat/completions' }],
};
`;

async function exitFixture(t: ExecutionContext) {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const plugins = tempDir(t, 'keyward-plugins-');
  copyFileSync(path.join(ROOT, 'test/support/plugins/stamp.js'), path.join(plugins, 'stamp.js'));
  // A closed port: connecting there is refused.
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const deadPort = (closed.address() as net.AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const app = await startApp(t, {
    env: {
      KEYWARD_PROVIDERS_DIR: providersDir(t, [], { 'signy.js': SIGNY }),
      KEYWARD_UPSTREAM_OPENAI: fake.url,
      KEYWARD_UPSTREAM_SIGNY: fake.url,
      KEYWARD_UPSTREAM_ANTHROPIC: `http://127.0.0.1:${deadPort}`,
      KEYWARD_PLUGINS_DIR: plugins,
      KEYWARD_PLUGINS: 'logging,stamp',
      KEYWARD_MAX_BODY: '4kb',
    },
  });
  const org = await createOrg(app);
  const openai = await createCredential(app, org, 'openai', 'sk-openai-exit-0123456789');
  const tokens = {
    openai: (await mintToken(app, org, openai)).token,
    scoped: (await mintToken(app, org, openai, '15m', { models: ['gpt-4o'] })).token,
    signy: (await mintToken(app, org, await createCredential(app, org, 'signy', 'sk-signy-secret-0123456789'))).token,
    dead: (await mintToken(app, org, await createCredential(app, org, 'anthropic', 'sk-ant-exit-0123456789'))).token,
  };
  const used = async (): Promise<number> => (await api(app, 'GET', '/v1/usage', { token: org.token })).body.proxy_requests.used;
  return { app, fake, org, tokens, used };
}

/** Each request's log hook ran exactly once (the stamp plugin's lines), with the status the caller got. */
function loggedOnce(t: ExecutionContext, app: TestApp, requestId: unknown, status: number, label: string): void {
  const lines = app.logs.filter((l) => l.message === 'stamp' && (l.stamp as { request_id: string }).request_id === requestId);
  t.is(lines.length, 1, `${label}: the log hook ran once`);
  t.is((lines[0]?.stamp as { status?: number } | undefined)?.status, status, `${label}: logged with the status sent`);
}

const CHAT = '/v1/proxy/v1/chat/completions';
const chat = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
/** The log hook runs when the response closes: a real event, waited for with a generous bound (a busy machine is slow). */
const until = (check: () => boolean) => eventually(check, 'the request\'s log line');

for (const transport of ['h1', 'h2c'] as Transport[]) {
  test(`${transport}: every refusal, fault and end carries responseHead and x-keyward-request-id, counts only if forwarded, and logs once`, async (t) => {
    const f = await exitFixture(t);
    const cases: Array<{ label: string; path?: string; token: string; body: string; length?: boolean; pieces?: number; headers?: Record<string, string>; status: number; code?: string; counted: boolean }> = [
      { label: 'proxied 200', token: f.tokens.openai, body: chat, status: 200, counted: true },
      { label: 'stage refusal (bad token)', token: 'ptok_nope', body: chat, status: 401, code: 'invalid_token', counted: false },
      { label: 'scope refusal before forwarding', token: f.tokens.scoped, body: JSON.stringify({ model: 'gpt-5' }), status: 403, code: 'model_not_allowed', counted: false },
      { label: 'body past KEYWARD_MAX_BODY without content-length, cut off after forwarding began', token: f.tokens.openai, body: JSON.stringify({ model: 'gpt-4o', pad: 'x'.repeat(8000) }), length: false, pieces: 8, status: 413, code: 'payload_too_large', counted: true },
      { label: 'body the scan refuses after forwarding began', token: f.tokens.scoped, body: `{"model":"gpt-4o","messages":[],"pad":"${'x'.repeat(2000)}","Model":"gpt-5"}`, length: false, pieces: 6, status: 400, code: 'invalid_request', counted: false },
      { label: 'signer ApiError, passed through as it is', token: f.tokens.signy, body: chat, headers: { 'x-sign-fail': 'api' }, status: 502, code: 'upstream_auth_failed', counted: false },
      { label: 'signer crash', token: f.tokens.signy, body: chat, headers: { 'x-sign-fail': 'plain' }, status: 502, code: 'upstream_unreachable', counted: false },
      { label: 'upstream unreachable', path: '/v1/proxy/v1/messages', token: f.tokens.dead, body: JSON.stringify({ model: 'claude-x', max_tokens: 5, messages: [] }), status: 502, code: 'upstream_unreachable', counted: true },
    ];
    for (const c of cases) {
      const before = await f.used();
      const r = await send(f.app.url, { transport, path: c.path ?? CHAT, headers: { 'x-proxy-token': c.token, ...c.headers }, body: c.body, length: c.length ?? true, pieces: c.pieces ?? 1, gapMs: c.pieces ? 10 : 0 });
      t.is(r.status, c.status, `${c.label}: ${r.text}`);
      if (c.code) t.is(r.body?.error?.code, c.code, c.label);
      t.is(r.headers['x-stamp'], String(c.status), `${c.label}: responseHead ran`);
      t.regex(String(r.headers['x-keyward-request-id']), /^req_/, c.label);
      if (c.counted) t.truthy(r.headers['x-keyward-quota-remaining'], `${c.label}: a counted request says what is left`);
      // The end (counters, log hooks) comes when the caller's response closes, just after the answer.
      await until(() => f.app.logs.some((l) => l.message === 'stamp' && (l.stamp as { request_id: string }).request_id === r.headers['x-keyward-request-id']));
      loggedOnce(t, f.app, r.headers['x-keyward-request-id'], c.status, c.label);
      t.is(await f.used(), before + (c.counted ? 1 : 0), `${c.label}: ${c.counted ? 'counted' : 'not counted'}`);
    }
    t.false(f.app.logText().includes('sk-signy-secret-0123456789'), 'a signer\'s message never logs the secret');
  });
}

test('a stream the upstream cuts mid-response reaches the caller as a cut (never a clean end), and logs once with the provider\'s status', async (t) => {
  const f = await exitFixture(t);
  for (const transport of ['h1', 'h2c'] as Transport[]) {
    const r = await send(f.app.url, { transport, path: CHAT, headers: { 'x-proxy-token': f.tokens.openai, 'x-fake-reset': '2' }, body: JSON.stringify({ model: 'gpt-4o', stream: true }) });
    t.is(r.status, 200, transport);
    t.false(r.complete, `${transport}: the caller saw a cut`);
    t.is(r.headers['x-stamp'], '200');
    const id = r.headers['x-keyward-request-id'];
    await until(() => f.app.logs.some((l) => l.message === 'stamp' && (l.stamp as { request_id: string }).request_id === id));
    loggedOnce(t, f.app, id, 200, `${transport} cut`);
  }
});
