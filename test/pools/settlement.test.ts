/**
 * Each attempt of a pooled request is settled by the one rule: an attempt whose body went whole to its
 * member and that got no answer (an idle timeout, a reset before the head) may have been billed, so it is
 * charged its reservation (spend at the token and the org, and tokens_per_minute) exactly as a plain token's
 * timed-out request is, and the next attempt reserves again or is not made (the caller then gets the
 * member's failure). An attempt answered 429, 529 or 5xx, or one nothing was sent for (connection refused),
 * costs nothing. Amounts are measured on the gateway itself: a plain token's timed-out request (its
 * reservation) and a plain token's answered one (its usage's cost).
 *
 * The idle timeout is Node's socket timer on the upstream request (`KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS`, short
 * here), which no injected clock drives.
 */
import test, { type ExecutionContext } from 'ava';
import type { ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { parseUsd } from '../../src/pricing/money.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';
import { api, mintToken } from '../support/app.js';
import { poolFixture, type Behaviour, type PoolFixture } from '../support/pool-fixture.js';
import { eventually } from '../support/wait.js';

const IDLE_MS = '250';
const BODY = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'settle me' }], max_tokens: 16 };
/** The body's worst case in tokens (the tokens_per_minute reservation): its bytes plus the overhead, and its output cap. */
const WORST_TOKENS = Buffer.byteLength(JSON.stringify(BODY)) + INPUT_OVERHEAD_TOKENS + BODY.max_tokens;

/** A member that reads the whole body and never answers: the gateway's idle timeout ends the attempt. */
const hang: Behaviour = (_res: ServerResponse) => {};

/** µ$ the gateway charged a request, from its access log line (written when the response closes). */
async function chargeOf(f: PoolFixture, res: Response): Promise<number> {
  const id = res.headers.get('x-keyward-request-id');
  let line: { spend_usd?: string } | undefined;
  await eventually(() => {
    line = f.app.logs.map((l) => l.keyward as { request_id?: string; spend_usd?: string } | undefined).find((k) => k?.request_id === id && k.spend_usd !== undefined);
    return line !== undefined;
  }, `the spend on the log line of ${id}`);
  return parseUsd(line!.spend_usd!)!;
}

/** The org's spend this month (GET /v1/usage `spend_usd.used`). */
async function orgUsed(f: PoolFixture): Promise<number> {
  const r = await api(f.app, 'GET', '/v1/usage', { token: f.org.token });
  return parseUsd(r.body.spend_usd.used)!;
}

/**
 * The fixture with an org cap (so its ledger counts), and what a plain token is charged: `timedOut`, the
 * reservation (a request to a member that never answers), and `answered`, an answered request's usage.
 */
async function measured(t: ExecutionContext, behaviours: Behaviour[], env: Record<string, string> = {}) {
  const f = await poolFixture(t, [hang, 'ok', ...behaviours], { env: { KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: IDLE_MS, ...env } });
  t.is((await api(f.app, 'PATCH', '/v1/orgs/self', { token: f.org.token, body: { spend_limit_usd: '100' } })).status, 200);
  const slow = await mintToken(f.app, f.org, f.members[0]!, '15m', { budget_usd: '1' });
  const late = await f.chat(slow.token, BODY);
  t.is(late.status, 504);
  const timedOut = await chargeOf(f, late);
  const fast = await mintToken(f.app, f.org, f.members[1]!, '15m', { budget_usd: '1' });
  const ok = await f.chat(fast.token, BODY);
  t.is(ok.status, 200);
  await ok.text();
  const answered = await chargeOf(f, ok);
  t.true(timedOut > answered && answered > 0, `a plain token's timeout is charged its reservation (${timedOut} µ$), an answer its usage (${answered} µ$)`);
  f.hits.length = 0;
  return { f, timedOut, answered, members: f.members.slice(2) };
}

/** A pool of `members` (ids), tried in order, and a token for it with `scopes`. */
async function pooled(f: PoolFixture, members: string[], scopes: Record<string, unknown>): Promise<string> {
  const p = await api(f.app, 'POST', '/v1/pools', { token: f.org.token, body: { strategy: 'ordered', members: members.map((credential_id) => ({ credential_id })) } });
  if (p.status !== 201) throw new Error(`pool create: ${p.status} ${p.text}`);
  const tk = await api(f.app, 'POST', '/v1/tokens', { token: f.org.token, body: { pool_id: p.body.id, ttl: '15m', ...scopes } });
  if (tk.status !== 201) throw new Error(`pool token: ${tk.status} ${tk.text}`);
  return tk.body.token;
}

const usd = (micros: number): string => (micros / 1e6).toFixed(6);

test('an attempt timed out after the whole body is charged its reservation at the token and the org; the next member is reserved again', async (t) => {
  const { f, timedOut, answered } = await measured(t, []);
  // Room for the charged attempt and the next one's reservation, not for a third reservation after both settle.
  const token = await pooled(f, [f.members[0]!, f.members[1]!], { budget_usd: usd(2 * timedOut + answered - 1) });
  const before = await orgUsed(f);
  const res = await f.chat(token, BODY);
  t.is(res.status, 200);
  t.is(res.headers.get('x-keyward-attempts'), '2');
  await res.text();
  t.deepEqual(f.hits, [0, 1]);
  t.is(await chargeOf(f, res), timedOut + answered, 'the timed-out attempt\'s reservation plus the answer\'s usage, on the log line');
  await eventually(async () => (await orgUsed(f)) - before === timedOut + answered, 'the org counts both attempts');
  // The token's ledger has both too: another reservation no longer fits its budget (member 0 cools, member 1 is tried).
  const next = await f.chat(token, BODY);
  t.is(next.status, 429);
  t.is(((await next.json()) as any).error.code, 'budget_exhausted');
  t.deepEqual(f.hits, [0, 1], 'nothing forwarded');
});

test('an attempt reset after the whole body is charged likewise, at spend and tokens_per_minute', async (t) => {
  const { f, timedOut, answered, members } = await measured(t, ['reset']);
  const token = await pooled(f, [members[0]!, f.members[1]!], { budget_usd: '1', tokens_per_minute: 2 * WORST_TOKENS + 8 - 1 });
  const before = await orgUsed(f);
  const res = await f.chat(token, BODY);
  t.is(res.status, 200);
  t.is(res.headers.get('x-keyward-attempts'), '2');
  await res.text();
  t.deepEqual(f.hits, [2, 1]);
  t.is(await chargeOf(f, res), timedOut + answered);
  await eventually(async () => (await orgUsed(f)) - before === timedOut + answered, 'the org counts both attempts');
  // The window holds the reset attempt's worst case and the answer's 8 tokens: another worst case does not fit.
  const next = await f.chat(token, BODY);
  t.is(next.status, 429);
  t.is(((await next.json()) as any).error.code, 'tokens_per_minute_exceeded');
});

test('attempts answered 429, 529 or 500 cost nothing: one reservation carries to the member that answers', async (t) => {
  const { f, timedOut, answered, members } = await measured(t, [429, 529, 500], { KEYWARD_POOL_ATTEMPTS: '4' });
  const before = await orgUsed(f);
  // Exactly one reservation: any charged failure would leave no room for the next attempt.
  const token = await pooled(f, [...members, f.members[1]!], { budget_usd: usd(timedOut), tokens_per_minute: WORST_TOKENS });
  const res = await f.chat(token, BODY);
  t.is(res.status, 200);
  t.is(res.headers.get('x-keyward-attempts'), '4');
  await res.text();
  t.deepEqual(f.hits, [2, 3, 4, 1]);
  t.is(await chargeOf(f, res), answered, 'only the answer\'s usage');
  await eventually(async () => (await orgUsed(f)) - before === answered, 'the org counts the answer only');
});

test('when the next reservation does not fit, the failover is not made: the member\'s own failure reaches the caller, charged once', async (t) => {
  const { f, timedOut, members } = await measured(t, ['reset']);
  const before = await orgUsed(f);
  // One reservation and most of a second.
  const slow = await pooled(f, [f.members[0]!, f.members[1]!], { budget_usd: usd(2 * timedOut - 1) });
  const late = await f.chat(slow, BODY);
  t.is(late.status, 504);
  t.is(late.headers.get('x-keyward-attempts'), '1');
  t.is(((await late.json()) as any).error.code, 'upstream_timeout', 'the member\'s timeout, as without a pool');
  t.deepEqual(f.hits, [0], 'the second member never reached');
  t.is(await chargeOf(f, late), timedOut);
  await eventually(async () => (await orgUsed(f)) - before === timedOut, 'the org counts the one attempt');

  // A tokens_per_minute cap of one worst case and a reset: 502, as the member gave it.
  const reset = await pooled(f, [members[0]!, f.members[1]!], { tokens_per_minute: WORST_TOKENS });
  const cut = await f.chat(reset, BODY);
  t.is(cut.status, 502);
  t.is(((await cut.json()) as any).error.code, 'upstream_unreachable');
  t.deepEqual(f.hits, [0, 2]);
  const again = await f.chat(reset, BODY);
  t.is(again.status, 429, 'the reset attempt\'s worst case is in the window');
  t.is(((await again.json()) as any).error.code, 'tokens_per_minute_exceeded');
});

test('a member that refuses the connection costs nothing: the reservation carries over to the next', async (t) => {
  // Every member behind a port nobody listens on: each attempt fails to connect.
  const dead = createServer();
  await new Promise<void>((r) => dead.listen(0, '127.0.0.1', () => r()));
  const port = (dead.address() as { port: number }).port;
  await new Promise<void>((r) => dead.close(() => r()));
  const f = await poolFixture(t, ['ok', 'ok', 'ok'], { env: { KEYWARD_UPSTREAM_OPENAI: `http://127.0.0.1:${port}` } });
  const probe = await mintToken(f.app, f.org, f.members[0]!, '15m', { budget_usd: '1' });
  const one = await f.chat(probe.token, BODY);
  t.is(one.status, 502);
  // A request that got no answer at all is charged its reservation by the one rule (nothing tells the exit it was never sent).
  const reservation = await chargeOf(f, one);
  t.true(reservation > 0);
  // Exactly one reservation: a charged connect error would stop the failover at the first member.
  const token = await pooled(f, f.members, { budget_usd: usd(reservation), tokens_per_minute: WORST_TOKENS });
  const res = await f.chat(token, BODY);
  t.is(res.status, 502);
  t.is(res.headers.get('x-keyward-attempts'), '3', 'every member tried: the refused connections cost nothing');
  t.is(await chargeOf(f, res), reservation, 'the last attempt settled as any request without an answer');
});
