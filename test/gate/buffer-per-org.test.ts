/**
 * KEYWARD_BUFFER_PER_ORG over the real gateway: an organisation with nine budgeted tokens, each trickling
 * an unfinished body within its own share (KEYWARD_BUFFER_PER_TOKEN), together holds no more than the
 * organisation's share of KEYWARD_BUFFER_BUDGET, so another organisation's 40 KB budgeted requests are
 * served (HTTP/1.1 and h2c). Without the organisation's share (set to the whole budget) the same nine
 * tokens hold nearly all of it and the other organisation gets 503 `overloaded`: what the share prevents.
 */
import test, { type ExecutionContext } from 'ava';
import http from 'node:http';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { providersDir } from '../support/providers-dir.js';
import { startUsageUpstream } from '../support/budget.js';
import { BufferBudget } from '../../src/gateway/entry/buffer-budget.js';
import { send, type Transport } from '../support/transport.js';
import { eventually as until } from '../support/wait.js';

const KB = 1024;
const TOKENS = 9;
/** Each trickled body's first part: within one token's 128 kB share, nine of them leave less of the 1 MB budget than 40 kB. */
const TRICKLED = 110 * KB;

/** An HTTP/1.1 request whose body is written in part and never ended (not request(), which sends a whole body); its status once answered (0 until then). */
function openTrickle(url: string, token: string, first: string) {
  const req = http.request(`${url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { 'x-proxy-token': token, 'content-type': 'application/json' } });
  req.on('error', () => {});
  let status = 0;
  req.on('response', (res) => {
    status = res.statusCode ?? 0;
    res.resume();
  });
  req.write(first);
  return { close: () => req.destroy(), get status() { return status; } };
}

/** Org A's nine tokens trickle their bodies; then org B's 40 KB budgeted requests, over HTTP/1.1 and h2c. */
async function nineTokens(t: ExecutionContext, env: Record<string, string>) {
  const up = await startUsageUpstream();
  t.teardown(() => up.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']), KEYWARD_UPSTREAM_PRICED: up.url, KEYWARD_BUFFER_BUDGET: '1mb', KEYWARD_BUFFER_PER_TOKEN: '128kb', ...env } });
  const orgA = await createOrg(app, 'many-tokens');
  const credA = await createCredential(app, orgA, 'priced', 'sk-priced-0123456789');
  const orgB = await createOrg(app, 'victim');
  const b = await mintToken(app, orgB, await createCredential(app, orgB, 'priced', 'sk-priced-0123456789'), '1h', { budget_usd: '10' });
  const budget = app.server.container.resolve(BufferBudget);
  const trickles = [];
  let refusedA = 0;
  for (let i = 0; i < TOKENS; i++) {
    const a = await mintToken(app, orgA, credA, '1h', { budget_usd: '10' });
    const r = openTrickle(app.url, a.token, `{"model":"pm-1","max_tokens":5,"messages":[{"role":"user","content":"${'x'.repeat(TRICKLED)}`);
    trickles.push(r);
    t.teardown(() => r.close());
    // Held whole by the budget's scan, or refused: either way the gateway has decided about these bytes.
    await until(() => budget.heldBy(a.id) >= TRICKLED || r.status !== 0, `token ${i}'s body held or refused`);
    if (r.status !== 0) {
      t.is(r.status, 503, `token ${i}: refused overloaded`);
      refusedA++;
    }
  }
  const heldByA = budget.heldByOrg(orgA.id);
  const body = JSON.stringify({ model: 'pm-1', max_tokens: 5, messages: [{ role: 'user', content: 'y'.repeat(40 * KB) }] });
  const victim: Record<Transport, number> = { h1: 0, h2c: 0 };
  for (const transport of ['h1', 'h2c'] as const) {
    victim[transport] = (await send(app.url, { transport, length: false, path: '/v1/proxy/v1/chat/completions', headers: { 'x-proxy-token': b.token }, body, pieces: 4 })).status;
  }
  t.true(budget.held <= 1024 * KB, 'the budget was never passed');
  for (const r of trickles) r.close();
  await until(() => budget.held === 0, 'every held byte given back once the trickles are gone');
  return { refusedA, heldByA, victim, served: up.received.length };
}

test('KEYWARD_BUFFER_PER_ORG (default a quarter of the budget): nine tokens of one organisation hold at most its share, and another organisation\'s 40 KB budgeted requests are served', async (t) => {
  const r = await nineTokens(t, {});
  t.is(r.refusedA, TOKENS - 2, 'two bodies fit the organisation\'s 256 kB; the other seven tokens were refused, each within its own share');
  t.true(r.heldByA <= 256 * KB, `the organisation held ${r.heldByA} bytes`);
  t.deepEqual(r.victim, { h1: 200, h2c: 200 }, 'the other organisation was served over both transports');
  t.is(r.served, 2, 'only the other organisation\'s requests reached the provider');
});

test('without an organisation\'s share (KEYWARD_BUFFER_PER_ORG = the whole budget) the same nine tokens starve the other organisation: what the share prevents', async (t) => {
  const r = await nineTokens(t, { KEYWARD_BUFFER_PER_ORG: '1mb' });
  t.is(r.refusedA, 0, 'every token held its body within its own share');
  t.true(r.heldByA > 1024 * KB - 40 * KB, `the organisation held ${r.heldByA} bytes`);
  t.deepEqual(r.victim, { h1: 503, h2c: 503 });
  t.is(r.served, 0);
});
