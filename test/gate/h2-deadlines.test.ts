/**
 * HTTP/2 streams keep HTTP/1.1's deadlines (src/http/h2c.ts), read against the injected clock: a body not
 * ended within KEYWARD_BODY_TIMEOUT_MS of its headers is answered 408 request_timeout and its stream ended
 * (admin and proxy alike; the provider never sees a whole body, nothing is stored); a session that opens
 * no stream within KEYWARD_HEADERS_TIMEOUT_MS is closed. And one token's bodies hold at most its share of
 * the buffer budget (KEYWARD_BUFFER_PER_TOKEN): a token trickling large bodies no longer makes another
 * organisation's budgeted request 503 (issue 23: it did, and the trickle stayed open past 12 s).
 */
import test, { type ExecutionContext } from 'ava';
import http2 from 'node:http2';
import { api, createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { providersDir } from '../support/providers-dir.js';
import { startUsageUpstream } from '../support/budget.js';
import { BufferBudget } from '../../src/gateway/entry/buffer-budget.js';
import { send } from '../support/transport.js';
import { eventually as until } from '../support/wait.js';

/** The deadlines' sweep runs every quarter of the shorter timeout (1000 ms here): a deadline is enforced at the first sweep past it. */
const SWEEP_MS = 250;

/**
 * A PING's round trip on the session: frames on a connection arrive in order, so whatever the server sent
 * before acknowledging it (a 408, a GOAWAY) has reached the client by then.
 */
const roundTrip = (session: http2.ClientHttp2Session): Promise<void> => new Promise((resolve) => {
  if (session.destroyed || session.closed || !session.ping(() => resolve())) resolve();
});

/** An h2c request whose body is written in part and never ended (not request(): HTTP/1.1, whole bodies); its answer (status, error code) when one comes. */
function openTrickle(url: string, path: string, headers: Record<string, string>, first: string) {
  const session = http2.connect(url);
  session.on('error', () => {});
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json', ...headers });
  stream.on('error', () => {});
  stream.write(first);
  let status = 0;
  let text = '';
  stream.on('response', (h) => (status = Number(h[':status'])));
  stream.on('data', (d: Buffer) => (text += d.toString()));
  const closed = new Promise<{ status: number; code: string | undefined; rst: number }>((resolve) => stream.on('close', () => {
    let code: string | undefined;
    try {
      code = JSON.parse(text).error?.code;
    } catch { /* no body */ }
    resolve({ status, code, rst: stream.rstCode ?? -1 });
    session.close();
  }));
  return { stream, session, closed, get status() { return status; } };
}

async function gateway(t: ExecutionContext, env: Record<string, string>, clock?: ManualClock) {
  const up = await startUsageUpstream();
  t.teardown(() => up.close());
  // The deadlines are read on the clock and swept on its timers: the test moves both.
  const app = await startApp(t, { ...(clock ? { clock, timers: clock } : {}), env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']), KEYWARD_UPSTREAM_PRICED: up.url, ...env } });
  return { app, up };
}

test('an h2c body not ended within KEYWARD_BODY_TIMEOUT_MS: 408 request_timeout, the stream reset, on admin and proxy paths; the provider never has a whole body', async (t) => {
  const clock = new ManualClock(Date.now());
  const { app, up } = await gateway(t, { KEYWARD_HEADERS_TIMEOUT_MS: '1000', KEYWARD_BODY_TIMEOUT_MS: '2000' }, clock);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'priced', 'sk-priced-0123456789');
  const tok = await mintToken(app, org, cred, '1h');
  const budgeted = await mintToken(app, org, cred, '1h', { budget_usd: '10' });
  const cases: Array<{ label: string; path: string; headers: Record<string, string>; body: string }> = [
    { label: 'admin POST /v1/credentials', path: '/v1/credentials', headers: { authorization: `Bearer ${org.token}` }, body: '{"provider":"priced","api_key":"sk-trickled-0123' },
    { label: 'proxy, streamed straight upstream', path: '/v1/proxy/v1/chat/completions', headers: { 'x-proxy-token': tok.token }, body: '{"model":"pm-1","max_tokens":5,"messages":[' },
    { label: 'proxy, held by a budget\'s scan', path: '/v1/proxy/v1/chat/completions', headers: { 'x-proxy-token': budgeted.token }, body: '{"model":"pm-1","max_tokens":5,"messages":[' },
  ];
  for (const c of cases) {
    const started = up.started;
    const r = openTrickle(app.url, c.path, c.headers, c.body);
    // The gateway has it (the unscoped one already went upstream, its body still open).
    await until(() => app.server.http.inflightRequests > 0, `${c.label} arrived`);
    if (c.label.includes('straight')) await until(() => up.started > started, 'upstream has the head');
    await clock.tick(1999);
    await roundTrip(r.session);
    t.is(r.status, 0, `${c.label}: still waiting before its deadline`);
    await clock.tick(1 + SWEEP_MS); // past the deadline: the next sweep answers
    const end = await r.closed;
    t.is(end.status, 408, c.label);
    t.is(end.code, 'request_timeout', c.label);
    // The answer went out whole, then RST_STREAM: the client must stop sending.
    t.is(end.rst, http2.constants.NGHTTP2_CANCEL, `${c.label}: the stream was reset by the server after its answer`);
  }
  t.is(up.received.length, 0, 'the provider never received a whole body');
  const list = await api(app, 'GET', '/v1/credentials', { token: org.token });
  t.is(list.body.data.length, 1, 'the trickled credential was never stored');
  // A prompt h2c request is untouched.
  t.is((await send(app.url, { transport: 'h2c', length: false, path: '/v1/proxy/v1/chat/completions', headers: { 'x-proxy-token': tok.token }, body: '{"model":"pm-1","max_tokens":5,"messages":[]}' })).status, 200);
});

test('an h2c session that opens no stream within KEYWARD_HEADERS_TIMEOUT_MS is closed', async (t) => {
  const clock = new ManualClock(Date.now());
  const { app } = await gateway(t, { KEYWARD_HEADERS_TIMEOUT_MS: '1000', KEYWARD_BODY_TIMEOUT_MS: '2000' }, clock);
  const session = http2.connect(app.url);
  session.on('error', () => {});
  const closed = new Promise<void>((resolve) => session.on('close', () => resolve()));
  await new Promise<void>((resolve) => session.once('remoteSettings', () => resolve()));
  await clock.tick(999);
  await roundTrip(session);
  t.false(session.destroyed || session.closed, 'still open just before its deadline');
  await clock.tick(1 + SWEEP_MS);
  await closed;
  t.true(session.destroyed || session.closed);
});

/** Token A (org A, budgeted) holds `streams` trickled bodies of `size` bytes each; then org B's budgeted request. */
async function starve(t: ExecutionContext, perToken: string): Promise<{ refusedA: number; b: number }> {
  // The organisation's share is the whole budget here: what is measured is the token's share alone.
  const { app } = await gateway(t, { KEYWARD_BUFFER_BUDGET: '1mb', KEYWARD_BUFFER_PER_TOKEN: perToken, KEYWARD_BUFFER_PER_ORG: '1mb' });
  const orgA = await createOrg(app, 'trickler');
  const a = await mintToken(app, orgA, await createCredential(app, orgA, 'priced', 'sk-priced-0123456789'), '1h', { budget_usd: '10' });
  const orgB = await createOrg(app, 'victim');
  const b = await mintToken(app, orgB, await createCredential(app, orgB, 'priced', 'sk-priced-0123456789'), '1h', { budget_usd: '10' });
  const budget = app.server.container.resolve(BufferBudget);
  const size = 240 * 1024;
  const held = [];
  let refusedA = 0;
  for (let i = 0; i < 4; i++) {
    const r = openTrickle(app.url, '/v1/proxy/v1/chat/completions', { 'x-proxy-token': a.token }, `{"model":"pm-1","max_tokens":5,"messages":[{"role":"user","content":"${'x'.repeat(size)}`);
    held.push(r);
    // Held whole by the scan, or refused: either way the gateway has decided about these bytes.
    await until(() => budget.heldBy(a.id) >= (i + 1 - refusedA) * size || r.status !== 0, `stream ${i} held or refused`);
    if (r.status === 503) refusedA++;
  }
  const body = JSON.stringify({ model: 'pm-1', max_tokens: 5, messages: [{ role: 'user', content: 'y'.repeat(100 * 1024) }] });
  const victim = await send(app.url, { transport: 'h2c', length: false, path: '/v1/proxy/v1/chat/completions', headers: { 'x-proxy-token': b.token }, body, pieces: 4 });
  for (const r of held) r.stream.close(http2.constants.NGHTTP2_CANCEL);
  t.true(budget.held <= 1024 * 1024, 'the budget was never passed');
  return { refusedA, b: victim.status };
}

test('KEYWARD_BUFFER_PER_TOKEN: a token trickling large bodies gets 503 past its share, and another organisation\'s budgeted request still gets through', async (t) => {
  const shared = await starve(t, '256kb');
  t.is(shared.refusedA, 3, 'the trickling token held one body; its next three were refused (overloaded)');
  t.is(shared.b, 200, 'the other organisation\'s budgeted request was served');
});

test('without a share (KEYWARD_BUFFER_PER_TOKEN = the whole budget) the same trickle starves the other organisation: what the share prevents', async (t) => {
  const whole = await starve(t, '1mb');
  t.is(whole.refusedA, 0, 'the trickling token held all four bodies');
  t.is(whole.b, 503);
});

test('an h2c client that vanishes mid-body: the provider never takes the cut body for a whole one (with or without content-length, scanned or not)', async (t) => {
  const { app, up } = await gateway(t, {});
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'priced', 'sk-priced-0123456789');
  const plain = await mintToken(app, org, cred, '1h');
  const scoped = await mintToken(app, org, cred, '1h', { models: ['pm-1'] });
  const first = '{"model":"pm-1","max_tokens":5,"messages":[{"role":"user","content":"hel';
  for (const token of [plain.token, scoped.token]) {
    for (const length of [undefined, String(first.length + 10)]) {
      const started = up.started;
      const r = openTrickle(app.url, '/v1/proxy/v1/chat/completions', { 'x-proxy-token': token, ...(length ? { 'content-length': length } : {}) }, first);
      // The provider has the request's head and first bytes: then the client gives up.
      await until(() => up.started > started, 'forwarded');
      // Its connection drops mid-body (Node's own stream.close() would send END_STREAM first, a whole body).
      r.session.destroy();
      await r.closed;
    }
  }
  // Give the gateway a moment to have passed on anything it would have: then nothing arrived whole.
  await until(() => app.server.http.inflightRequests === 0, 'every request over');
  t.is(up.received.length, 0, 'no cut body reached the provider as a whole one');
});
