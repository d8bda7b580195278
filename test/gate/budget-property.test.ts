/**
 * Property (fast-check): whatever the mix, what the provider bills never passes a token's budget_usd or its
 * organisation's spend_limit_usd, and the tokens it bills a token with tokens_per_minute never pass that cap
 * within any 60 s. A scenario is 1 or 3 instances (over one store), tokens with and without budgets under an
 * organisation cap, and requests of every stream shape over HTTP/1.1 or h2c (with or without content-length),
 * with provider-side tools (bounded, and not), at 1 to 16 at once, each ending whole, cut by the provider or
 * left by the caller after some event. The billing fake bills as a provider may: input up to what the gateway
 * bounds it by (the body's bytes plus the overhead; the context window with tools), tool uses up to the
 * request's limit, output up to the cap whenever it was cut before its final usage. Every request's charge is
 * also checked against its bills.
 *
 * Pools: Anthropic and OpenAI requests may go through a pooled token (the same scopes, a pool each) whose
 * members, drawn per scenario, answer, time out after taking the whole body, reset the connection after it, or answer 429 or
 * 503. A member that took the whole body bills it (input, and output up to the cap) even though it never
 * answers; one that answered 429 or 503 bills nothing. A pooled request's bills are all its attempts'.
 *
 * With 3 instances, they are child processes of the built server and one is killed (SIGKILL) at some request:
 * what it had in flight is cut by its death, the others go on; the bills, its own included, still never pass
 * a budget or the cap (its holders keep what they had armed counted as used).
 *
 * A failing scenario is shrunk (fewer and plainer requests, members, caps) and reported with fast-check's seed
 * and path. `npm test` runs one scenario per instance count from a fixed seed (KEYWARD_PROPERTY_SCENARIOS,
 * default 2, split between the two); `npm run test:fuzz` runs many more. KEYWARD_PROPERTY_SEED sets the seed
 * (`random`: fast-check picks one), KEYWARD_PROPERTY_PATH replays a reported path with it,
 * KEYWARD_PROPERTY_REQUESTS bounds the requests per scenario (default 40), KEYWARD_PROPERTY_SHRINK_S bounds
 * the time spent shrinking (default 120), KEYWARD_PROPERTY_SPAWN=0 keeps 3 instances in this process (none
 * killed).
 */
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import { formatUsd } from '../../src/pricing/money.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';
import { api } from '../support/app.js';
import { billCost, billingGateway, priceOf, type BillingGateway } from '../support/billing-gateway.js';
import { bytesOfEvents, MEMBER_BEHAVIOURS, SHAPE_SPECS, SHAPES, type MemberBehaviour, type StreamShape } from '../support/billing-provider.js';
import { pool } from '../support/pool.js';
import { send } from '../support/transport.js';

const SCENARIOS = Number(process.env.KEYWARD_PROPERTY_SCENARIOS ?? 2);
const REQUESTS = Number(process.env.KEYWARD_PROPERTY_REQUESTS ?? 40);
const SEED = process.env.KEYWARD_PROPERTY_SEED === 'random' ? undefined : Number(process.env.KEYWARD_PROPERTY_SEED ?? 0xb0d9e7);
const PATH = process.env.KEYWARD_PROPERTY_PATH;
const SHRINK_MS = Number(process.env.KEYWARD_PROPERTY_SHRINK_S ?? 120) * 1000;
/** Several instances are child processes of the built server (so one can be killed) unless KEYWARD_PROPERTY_SPAWN=0. */
const SPAWN = process.env.KEYWARD_PROPERTY_SPAWN !== '0';
/** A member that never answers is given up on after this much silence (Node's socket timer: no injected clock drives it). */
const IDLE_MS = '1000';

/** The providers whose requests may go through a pool, and how many pools each has per scope. */
const POOLED = ['anthropic', 'openai'] as const;
const POOLS = 3;
type Pooled = (typeof POOLED)[number];

/** A provider-side tool a request may use: what it adds to the body, its fee and how many uses the body allows (none: unbounded). */
interface ToolUse {
  extra: Record<string, unknown>;
  perUseMicros?: number;
  maxUses?: number;
}

const claudeSearch = (uses: number): ToolUse => ({ extra: { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: uses }] }, perUseMicros: 10_000, maxUses: uses });
/** Each shape's tools, made with a use limit of 1 to 3 (where the tool takes one). */
const TOOLS: Partial<Record<StreamShape, Array<(uses: number) => ToolUse>>> = {
  'anthropic': [claudeSearch, () => ({ extra: { tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] } })],
  'vertex-anthropic': [claudeSearch],
  'bedrock-invoke': [claudeSearch],
  'openai-responses': [(calls) => ({ extra: { tools: [{ type: 'web_search' }], max_tool_calls: calls }, perUseMicros: 25_000, maxUses: calls })],
  'openai-chat': [() => ({ extra: { web_search_options: {} } })],
  'gemini': [() => ({ extra: { tools: [{ googleSearch: {} }] }, perUseMicros: 35_000, maxUses: 1 })],
  'vertex-gemini': [() => ({ extra: { tools: [{ urlContext: {} }] }, perUseMicros: 0, maxUses: 0 })],
};

/** One request as drawn: free numbers are reduced to their ranges (modulo) once the shape fixes them. */
interface Draw {
  shape: StreamShape;
  maxTokens: number;
  tool: { pick: number; uses: number } | undefined;
  /** undefined: bill input at the gateway's bound; else an offset above the body's bytes. */
  input: number | undefined;
  output: number;
  toolUses: number;
  cut: 'none' | 'provider' | 'caller';
  k: number;
  token: number;
  transport: 'h1' | 'h2c';
  length: boolean;
  pieces: boolean;
  app: number;
  /** Through one of the provider's pools for the token's scope, when it has them. */
  pooled: boolean;
  replica: number;
}

interface Scenario {
  orgCap: number;
  budgets: [number, number];
  perMinute: number;
  concurrency: number;
  killAt: number;
  members: Record<Pooled, MemberBehaviour[]>;
  strategy: 'ordered' | 'round_robin' | 'least_busy';
  requests: Draw[];
}

const weighted = <T>(p: number, yes: fc.Arbitrary<T>, no: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  fc.oneof({ weight: Math.round((1 - p) * 10), arbitrary: no }, { weight: Math.round(p * 10), arbitrary: yes });

const drawArb: fc.Arbitrary<Draw> = fc.record({
  shape: fc.constantFrom(...SHAPES),
  maxTokens: fc.integer({ min: 16, max: 4015 }),
  tool: weighted(0.3, fc.record({ pick: fc.nat(), uses: fc.integer({ min: 1, max: 3 }) }), fc.constant(undefined)),
  input: weighted(0.5, fc.constant(undefined), fc.nat()),
  output: fc.nat(),
  toolUses: fc.nat(),
  cut: fc.constantFrom('none', 'none', 'provider', 'caller'),
  k: fc.nat(),
  token: fc.nat(),
  transport: fc.constantFrom('h1', 'h2c'),
  length: fc.boolean(),
  pieces: weighted(0.2, fc.constant(true), fc.constant(false)),
  app: fc.nat(),
  pooled: weighted(0.7, fc.constant(true), fc.constant(false)),
  replica: fc.nat(),
});

/** A member answers, times out or resets after the body as often as not; 429 and 503 (free) less often. */
const memberArb: fc.Arbitrary<MemberBehaviour> = fc.oneof(
  ...MEMBER_BEHAVIOURS.map((b) => ({ weight: b === '429' || b === '503' ? 1 : 2, arbitrary: fc.constant(b) })),
);
const membersArb = fc.array(memberArb, { minLength: 2, maxLength: 3 });

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  orgCap: fc.integer({ min: 50_000, max: 3_050_000 }),
  budgets: fc.tuple(fc.integer({ min: 20_000, max: 420_000 }), fc.integer({ min: 20_000, max: 1_020_000 })),
  // Small enough that a few requests reach it (a request with provider-side tools reserves a context window: refused).
  perMinute: fc.integer({ min: 4_000, max: 24_000 }),
  concurrency: fc.constantFrom(1, 4, 16),
  killAt: fc.nat(),
  members: fc.record({ anthropic: membersArb, openai: membersArb }),
  strategy: fc.constantFrom('ordered', 'round_robin', 'least_busy'),
  requests: fc.array(drawArb, { minLength: 1, maxLength: REQUESTS, size: 'max' }),
});

interface Outcome {
  /** `<provider>:<scope index>` or `<provider>-pool<n>:<scope index>`. */
  token: string;
  billId: string;
  pooled: boolean;
  status: number;
  requestId: string | undefined;
  perUseMicros: number;
  /** Sent to the instance that was killed: what it charged died with it (its holders keep it counted as used). */
  toKilled: boolean;
}

/** What one run starts, closed when the run ends (a scenario shrunk many times must not pile up servers). */
class RunScope {
  private readonly closers: Array<() => unknown> = [];

  teardown(fn: () => unknown): void {
    this.closers.push(fn);
  }

  async close(): Promise<void> {
    for (const fn of this.closers.reverse()) await fn();
  }
}

/** A failed check: thrown, so fast-check sees the run fail and shrinks it. */
function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

async function scenario(s: Scenario, instances: number): Promise<string> {
  const scope = new RunScope();
  try {
    return await run(scope as unknown as ExecutionContext, s, instances);
  } finally {
    await scope.close();
  }
}

async function run(t: ExecutionContext, s: Scenario, instances: number): Promise<string> {
  const g: BillingGateway = await billingGateway(t, { instances, spawn: SPAWN && instances > 1, env: { KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: IDLE_MS } });
  // The organisation's cap is set before any request, so every instance starts from it.
  check((await api(g.apps[0]!.url, 'PATCH', '/v1/orgs/self', { token: g.org.token, body: { spend_limit_usd: formatUsd(s.orgCap) } })).status === 200, 'org cap set');
  const budgets = [...s.budgets, undefined];
  // A fourth token per provider has a tokens_per_minute cap instead (the same gate, reservation and settlement).
  const scopes = [...budgets.map((b) => (b === undefined ? {} : { budget_usd: formatUsd(b) })), { tokens_per_minute: s.perMinute }];
  const TPM = scopes.length - 1;
  const tokens: Record<string, Array<{ id: string; token: string }>> = {};
  for (const provider of ['anthropic', 'openai', 'gemini', 'bedrock', 'vertex'] as const) {
    tokens[provider] = [];
    for (const sc of scopes) tokens[provider]!.push(await g.token(provider, sc));
  }
  // POOLS pools per provider and scope, a token each: members cool per pool (5 s after a failure, longer than a
  // scenario), so each pool's token meets its failing members afresh.
  for (const provider of POOLED) {
    for (let p = 0; p < POOLS; p++) {
      tokens[`${provider}-pool${p}`] = [];
      for (const sc of scopes) tokens[`${provider}-pool${p}`]!.push(await g.poolToken(await g.pool(provider, s.members[provider], s.strategy), sc));
    }
  }
  const n = s.requests.length;
  // One instance of several is killed when request `killAt` is about to be sent.
  const victim = instances > 1 ? g.apps[instances - 1]! : undefined;
  const killAt = victim?.kill && n > 1 ? 1 + (s.killAt % (n - 1)) : -1;
  let killed = false;
  const outcomes = await pool(n, s.concurrency, async (i): Promise<Outcome> => {
    if (i === killAt) {
      await victim!.kill!('SIGKILL');
      killed = true;
    }
    const d = s.requests[i]!;
    const spec = SHAPE_SPECS[d.shape];
    const menu = TOOLS[d.shape];
    const tool = menu && d.tool ? menu[d.tool.pick % menu.length]!(d.tool.uses) : undefined;
    const body = JSON.stringify(spec.body(d.maxTokens, tool?.extra));
    const bytes = Buffer.byteLength(body);
    const price = priceOf(spec.provider, spec.model);
    // What the provider may bill as input: up to the gateway's bound for it.
    const inputCap = tool ? price.contextWindow! : Math.min(bytes + INPUT_OVERHEAD_TOKENS, price.contextWindow ?? Infinity);
    const input = d.input === undefined ? inputCap : bytes + (d.input % (inputCap - bytes + 1));
    const events = spec.events(1, 1).length;
    const k = d.k % events;
    const tokenIndex = d.token % scopes.length;
    const pooled = d.pooled && (POOLED as readonly string[]).includes(spec.provider);
    const key = pooled ? `${spec.provider}-pool${d.replica % POOLS}` : spec.provider;
    const billId = `r${i}`;
    const headers: Record<string, string> = {
      'x-proxy-token': tokens[key]![tokenIndex]!.token, 'x-bill-id': billId, 'x-bill-input': String(input),
      'x-bill-output': String(d.output % (d.maxTokens + 1)), 'x-bill-tool-uses': String(tool?.maxUses === undefined ? 0 : d.toolUses % (tool.maxUses + 1)),
    };
    if (d.cut === 'provider') headers['x-bill-cut'] = String(k);
    if (d.cut === 'caller') headers['x-bill-pause'] = String(k);
    const want = bytesOfEvents(d.shape, k, 1, 1);
    let got = 0;
    const alive = killed ? g.apps.filter((a) => a !== victim) : g.apps;
    const app = alive[d.app % alive.length]!;
    const r = await send(app.url, {
      // A pooled request declares its length, so its body can be kept for the next member (a chunked one is never
      // sent again: test/pools/failover.test.ts).
      transport: d.transport, length: d.length || pooled, pieces: d.pieces ? 3 : 1, path: `/v1/proxy/${spec.path}`, headers, body,
      onHead: (abort) => {
        if (d.cut === 'caller' && k === 0) abort();
      },
      onData: (chunk, abort) => {
        got += chunk.length;
        // Event sizes differ with the counts they carry: leaving once at least k events' worth arrived is near enough.
        if (d.cut === 'caller' && got >= want) abort();
      },
    });
    const requestId = r.headers['x-keyward-request-id'];
    return { token: `${key}:${tokenIndex}`, billId, pooled, status: r.status, requestId: typeof requestId === 'string' ? requestId : undefined, perUseMicros: tool?.perUseMicros ?? 0, toKilled: app === victim };
  });
  // What the provider billed, per token and in all; each forwarded request's charge is at least its bills.
  const billed = new Map<string, number>();
  let total = 0;
  let attempts = 0;
  /** Pooled requests billed by more than one member (an attempt billed without an answer, then another). */
  let rebilled = 0;
  const statuses = new Map<number, number>();
  for (const o of outcomes) {
    statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1);
    // A request to the instance that was killed may have died with it (no answer, or a cut one); a pooled one
    // may end with its last member's failure (its 429 or 503, a timeout, a reset); any may meet the idle timeout
    // on a loaded machine (504: charged its reservation like any request without an answer).
    const expected = o.pooled ? [200, 400, 429, 502, 503, 504] : [200, 400, 429, 504];
    check(expected.includes(o.status) || (o.toKilled && killed), `${o.billId} (${o.token}) answered ${o.status}`);
    const bills = g.fake.attempts.get(o.billId) ?? [];
    if (bills.length === 0) continue;
    attempts += bills.length;
    if (bills.length > 1) rebilled++;
    const cost = bills.reduce((sum, bill) => sum + billCost(bill, o.perUseMicros), 0);
    billed.set(o.token, (billed.get(o.token) ?? 0) + cost);
    total += cost;
    if (o.toKilled && killed) continue;
    const charged = (await g.chargeOf(o.requestId!)) ?? 0;
    check(charged >= cost, `${o.billId} (${o.token}, ${bills.length} bill(s)) charged ${charged} µ$ < billed ${cost} µ$`);
  }
  for (const [token, sum] of billed) {
    const budget = budgets[Number(token.split(':')[1])];
    if (budget !== undefined) check(sum <= budget, `token ${token}'s bills ${sum} µ$ passed its budget ${budget} µ$`);
  }
  check(total <= s.orgCap, `the organisation's bills ${total} µ$ passed its cap ${s.orgCap} µ$`);
  // tokens_per_minute: the tokens each capped token had billed (input + output) within any 60 s never pass it.
  let mostPerMinute = 0;
  for (const key of Object.keys(tokens)) {
    const uses = outcomes.filter((o) => o.token === `${key}:${TPM}`).flatMap((o) => (g.fake.attempts.get(o.billId) ?? []).map((bill) => ({ at: bill.at, tokens: bill.input + bill.output })))
      .sort((x, y) => x.at - y.at);
    for (let j = 0, i = 0, sum = 0; j < uses.length; j++) {
      sum += uses[j]!.tokens;
      while (uses[j]!.at - uses[i]!.at >= 60_000) sum -= uses[i++]!.tokens;
      mostPerMinute = Math.max(mostPerMinute, sum);
      check(sum <= s.perMinute, `${key}'s tokens_per_minute token had ${sum} tokens billed within 60 s, cap ${s.perMinute}`);
    }
  }
  const mostByBudget = Math.max(0, ...[...billed].filter(([k]) => budgets[Number(k.split(':')[1])] !== undefined).map(([, v]) => v));
  return `${instances} instance(s)${killAt >= 0 ? ` (one killed at request ${killAt})` : ''}, ${s.concurrency} at once, members ${JSON.stringify(s.members)} (${s.strategy}): `
    + `${g.fake.attempts.size}/${n} requests billed in ${attempts} attempt(s) (${rebilled} billed by two members or more), billed ${formatUsd(total)} of ${formatUsd(s.orgCap)} USD `
    + `(most by one budgeted token: ${formatUsd(mostByBudget)}; most tokens within 60 s by a tokens_per_minute token: ${mostPerMinute} of ${s.perMinute}); `
    + `answers ${[...statuses].map(([st, c]) => `${st}×${c}`).join(' ')}`;
}

// Each instance count has its own seed (KEYWARD_PROPERTY_SEED + the count), so the two draw different scenarios.
for (const instances of [1, 3]) {
  // KEYWARD_PROPERTY_SCENARIOS in all, split between the two instance counts (the odd one to a single instance).
  const runs = instances === 1 ? Math.ceil(SCENARIOS / 2) : Math.floor(SCENARIOS / 2);
  if (runs === 0) continue;
  test(`budget property: the provider's bills never pass a token's budget, tokens_per_minute or the organisation's cap, pools failing over included (${instances} instance${instances > 1 ? 's' : ''}, ${runs} scenario${runs > 1 ? 's' : ''}, seed ${SEED === undefined ? 'random' : SEED + instances})`, async (t) => {
    t.timeout(runs * 120_000 + SHRINK_MS + 60_000);
    const summaries: string[] = [];
    // Shrinking re-runs whole scenarios: past SHRINK_MS after the first failure the rest are passed over, and the
    // smallest failing scenario found so far is the one reported.
    let firstFailure: number | undefined;
    await fc.assert(fc.asyncProperty(scenarioArb, async (s) => {
      if (firstFailure !== undefined && performance.now() - firstFailure > SHRINK_MS) return;
      try {
        summaries.push(await scenario(s, instances));
      } catch (err) {
        firstFailure ??= performance.now();
        throw err;
      }
    }), { numRuns: runs, unbiased: true, includeErrorInReport: true, ...(SEED === undefined ? {} : { seed: SEED + instances }), ...(PATH ? { path: PATH } : {}) });
    for (const line of summaries) t.log(line);
    // fc.assert threw had any scenario broken the cap (with its seed and shrunk case); this says they ran.
    t.true(summaries.length > 0, 'the scenarios ran');
  });
}
