/**
 * A token's `max_concurrent` and `tokens_per_minute` on one instance: never more streams open at the
 * provider than the limit (the next one is refused 429 concurrency_exceeded with Retry-After, and admitted
 * once one ends), and never more tokens in any 60 s than the cap (a rolling window: worst case reserved,
 * settled to the usage reported, which leaves the window 60 s after the response; 429
 * tokens_per_minute_exceeded with the seconds until the oldest use leaves it), on the injected clock. Both are leased (src/accounting/token-limits.ts): the three-instance runs are in test/cluster/.
 */
import test, { type ExecutionContext } from 'ava';
import type { ServerResponse } from 'node:http';
import { api, createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { eventually } from '../support/wait.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';

const completion = { id: 'c', object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } };

async function setup(t: ExecutionContext, clock?: ManualClock) {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_OPENAI: fake.url }, ...(clock ? { clock, timers: clock } : {}) });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-limits-xxxxxxxxxxxxxxxxxxxx');
  return { fake, app, org, cred };
}

test('max_concurrent: never more open streams at the provider than the limit; the next is 429 concurrency_exceeded, then admitted once one ends', async (t) => {
  const { fake, app, org, cred } = await setup(t);
  let open = 0;
  let most = 0;
  const held: ServerResponse[] = [];
  fake.handler = (_req, res) => {
    open++;
    most = Math.max(most, open);
    res.on('close', () => open--);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n');
    held.push(res);
  };
  const { token } = await mintToken(app, org, cred, '15m', { max_concurrent: 2 });
  const chat = () => fetch(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true }) });
  const a = await chat();
  const b = await chat();
  t.is(a.status, 200);
  t.is(b.status, 200);
  const c = await chat();
  t.is(c.status, 429);
  t.is(c.headers.get('retry-after'), '1');
  t.is(((await c.json()) as any).error.code, 'concurrency_exceeded');
  t.is(most, 2);
  // One stream ends: its slot comes back when its exchange does.
  held.shift()!.end('data: [DONE]\n\n');
  await a.text();
  let d: Response | undefined;
  await eventually(async () => {
    const r = await chat();
    if (r.status === 200) d = r;
    else await r.text();
    return d !== undefined;
  }, 'a slot freed by the ended stream', 10_000);
  t.is(d!.status, 200);
  t.true(most <= 2, `never more than 2 open at the provider (saw ${most})`);
  for (const r of held) r.end('data: [DONE]\n\n');
  await Promise.all([b.text(), d!.text()]);
  const view = await api(app, 'GET', `/v1/tokens`, { token: org.token });
  t.is(view.body.data[0].max_concurrent, 2);
});

test('tokens_per_minute: worst case reserved, settled to reported usage, never past the cap in any 60 s (rolling, not a clock minute); Retry-After until the oldest use leaves the window', async (t) => {
  // Ten seconds before a minute turns: a UTC-minute window would open afresh at 12:01:00; a rolling one does not.
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 12, 0, 50));
  const { fake, app, org, cred } = await setup(t, clock);
  fake.handler = (_req, res) => {
    const text = JSON.stringify(completion);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
  const worst = Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS + 16;
  // Room for one worst case plus two settled requests (8 tokens each): exactly three fit in 60 s.
  const { token } = await mintToken(app, org, cred, '15m', { tokens_per_minute: worst + 16 });
  const chat = () => fetch(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  const refused = async (r: Response, retryAfter: string, why: string) => {
    t.is(r.status, 429, why);
    const error = ((await r.json()) as any).error;
    t.is(error.code, 'tokens_per_minute_exceeded');
    t.is(r.headers.get('retry-after'), retryAfter, `${why}: Retry-After`);
    // What it needed and what was left: three settled uses (8 tokens each) are in the window.
    t.deepEqual(error.detail, { cap: 'token.tokens_per_minute', needed_tokens: worst, left_tokens: worst + 16 - 24 }, why);
    t.is(error.message, `This request's worst case (${worst} tokens) does not fit in what is left of the token's tokens_per_minute (${worst - 8} tokens).`);
  };
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await chat();
    statuses.push(r.status);
    await r.text();
  }
  t.deepEqual(statuses, [200, 200, 200]);
  await refused(await chat(), '60', 'the fourth within the same second');
  t.is(fake.received.length, 3);
  const tooBig = await fetch(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], max_tokens: worst * 2 }) });
  t.is(tooBig.status, 429, 'a worst case above the whole cap never fits');
  const big = ((await tooBig.json()) as any).error.detail;
  t.is(big.cap, 'token.tokens_per_minute');
  t.true(big.needed_tokens > worst + 16 && big.left_tokens <= worst + 16, JSON.stringify(big));
  await clock.tick(20_000);
  await refused(await chat(), '40', 'a new clock minute is no new window: the uses are 20 s old');
  await clock.tick(39_000);
  await refused(await chat(), '1', 'a second before the oldest use leaves the window');
  t.is(fake.received.length, 3);
  await clock.tick(1_000);
  const next = await chat();
  t.is(next.status, 200, '60 s after the uses: they left the window');
  await next.text();
});

test('tokens_per_minute with an agent\'s tools: a tool schema naming `url` is a declaration, bounded by the body, alone and beside a budget (one scan for both)', async (t) => {
  const { fake, app, org, cred } = await setup(t);
  fake.handler = (_req, res) => {
    const text = JSON.stringify(completion);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const body = JSON.stringify({
    model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'fetch it' }],
    tools: [{ type: 'function', function: { name: 'WebFetch', parameters: { type: 'object', properties: { url: { type: 'string' }, source: { type: 'string' } } } } }],
  });
  const worst = Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS + 16;
  // A cap of one body-bounded worst case: the context window (128k for gpt-4o-mini) would never fit.
  for (const scopes of [{ tokens_per_minute: worst }, { tokens_per_minute: worst, budget_usd: '1.00' }]) {
    const { token } = await mintToken(app, org, cred, '15m', scopes);
    const r = await fetch(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
    t.is(r.status, 200, `${JSON.stringify(scopes)}: ${await r.text()}`);
  }
});
