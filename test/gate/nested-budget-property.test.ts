/**
 * Property (fast-check), the budget property's nested levels: whatever the mix, what the provider bills never
 * passes any level a request belongs to: its token's budget_usd, its member's and its team's monthly budget_usd,
 * the organisation's spend_limit_usd (budgets drawn at random, each level's independent of the others, so any
 * of them may be the one that binds). A scenario is 1 or 3 instances over one store, two teams with two members
 * each (plus a token of no team), tokens with and without budgets, requests of every stream shape over HTTP/1.1
 * or h2c at 1 to 16 at once, each ending whole, cut by the provider or left by the caller; with 3 instances
 * (child processes of the built server) one is killed (SIGKILL) at some request, and what it had in flight is
 * charged whole when its holders are reclaimed. The billing fake bills as a provider may (billing-provider.ts).
 * With one instance, every level also settles exactly: a team's month, as GET /v1/teams/:id shows it, is the
 * sum of what the gateway charged its requests.
 *
 * `npm test` runs one scenario per instance count from a fixed seed (KEYWARD_PROPERTY_SCENARIOS, default 2);
 * KEYWARD_PROPERTY_SEED, KEYWARD_PROPERTY_PATH, KEYWARD_PROPERTY_REQUESTS (default 30) as in budget-property.
 */
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import { formatUsd, parseUsd } from '../../src/pricing/money.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';
import { api } from '../support/app.js';
import { billCost, billingGateway, priceOf, type BilledProvider } from '../support/billing-gateway.js';
import { bytesOfEvents, SHAPE_SPECS, SHAPES, type StreamShape } from '../support/billing-provider.js';
import { pool } from '../support/pool.js';
import { send } from '../support/transport.js';

const SCENARIOS = Number(process.env.KEYWARD_PROPERTY_SCENARIOS ?? 2);
const REQUESTS = Number(process.env.KEYWARD_PROPERTY_REQUESTS ?? 30);
const SEED = process.env.KEYWARD_PROPERTY_SEED === 'random' ? undefined : Number(process.env.KEYWARD_PROPERTY_SEED ?? 0x7ea3);
const PATH = process.env.KEYWARD_PROPERTY_PATH;
const SPAWN = process.env.KEYWARD_PROPERTY_SPAWN !== '0';

/** Who a token belongs to: a team (0, 1) and a member of it (0, 1), or neither (team -1). */
const HOLDERS = [[0, 0], [0, 1], [1, 0], [1, 1], [-1, -1]] as const;

interface Draw {
  shape: StreamShape;
  maxTokens: number;
  input: number | undefined;
  output: number;
  cut: 'none' | 'provider' | 'caller';
  k: number;
  holder: number;
  budgeted: boolean;
  transport: 'h1' | 'h2c';
  length: boolean;
  app: number;
}

interface Scenario {
  orgCap: number;
  teams: [number | null, number | null];
  members: [[number | null, number | null], [number | null, number | null]];
  tokenBudget: number;
  concurrency: number;
  killAt: number;
  requests: Draw[];
}

const budget = (min: number, max: number) => fc.option(fc.integer({ min, max }), { nil: null, freq: 4 });
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  // Small enough that a scenario's requests reach some of them (a request's worst case is ~5k to 60k µ$).
  orgCap: fc.integer({ min: 60_000, max: 900_000 }),
  teams: fc.tuple(budget(30_000, 400_000), budget(30_000, 400_000)),
  members: fc.tuple(fc.tuple(budget(15_000, 200_000), budget(15_000, 200_000)), fc.tuple(budget(15_000, 200_000), budget(15_000, 200_000))),
  tokenBudget: fc.integer({ min: 15_000, max: 150_000 }),
  concurrency: fc.constantFrom(1, 4, 16),
  killAt: fc.nat(),
  requests: fc.array(fc.record({
    shape: fc.constantFrom(...SHAPES),
    maxTokens: fc.integer({ min: 16, max: 4015 }),
    input: fc.option(fc.nat(), { nil: undefined }),
    output: fc.nat(),
    cut: fc.constantFrom('none', 'none', 'provider', 'caller'),
    k: fc.nat(),
    holder: fc.nat(),
    budgeted: fc.boolean(),
    transport: fc.constantFrom('h1', 'h2c'),
    length: fc.boolean(),
    app: fc.nat(),
  }), { minLength: 1, maxLength: REQUESTS, size: 'max' }),
});

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

async function run(t: ExecutionContext, s: Scenario, instances: number): Promise<string> {
  const g = await billingGateway(t, { instances, spawn: SPAWN && instances > 1, env: { KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: '1000' } });
  const admin = (method: string, path: string, body?: unknown) => api(g.apps[0]!.url, method, path, { token: g.org.token, ...(body ? { body } : {}) });
  check((await admin('PATCH', '/v1/orgs/self', { spend_limit_usd: formatUsd(s.orgCap) })).status === 200, 'org cap set');
  const teamIds: string[] = [];
  for (const [i, b] of s.teams.entries()) {
    const r = await admin('POST', '/v1/teams', { name: `team ${i}`, credentials: Object.values(g.credentials), max_ttl: '1h', ...(b === null ? {} : { budget_usd: formatUsd(b) }) });
    check(r.status === 201, `team create: ${r.text}`);
    teamIds.push(r.body.id);
  }
  const memberId = (team: number, m: number) => `usr_t${team}m${m}`;
  for (const [team, list] of s.members.entries()) {
    for (const [m, b] of list.entries()) if (b !== null) check((await admin('PATCH', `/v1/members/${memberId(team, m)}`, { budget_usd: formatUsd(b) })).status === 200, 'member budget set');
  }
  // Per holder, per provider: a token without a budget and one with the scenario's token budget.
  const tokens = new Map<string, string>();
  for (const [h, [team, m]] of HOLDERS.entries()) {
    for (const provider of Object.keys(g.credentials) as BilledProvider[]) {
      for (const budgeted of [false, true]) {
        const bind = team < 0 ? {} : { team_id: teamIds[team], member_id: memberId(team, m) };
        tokens.set(`${h}:${provider}:${budgeted}`, (await g.token(provider, { ...bind, ...(budgeted ? { budget_usd: formatUsd(s.tokenBudget) } : {}) })).token);
      }
    }
  }
  const n = s.requests.length;
  const victim = instances > 1 ? g.apps[instances - 1]! : undefined;
  const killAt = victim?.kill && n > 1 ? 1 + (s.killAt % (n - 1)) : -1;
  let killed = false;
  const outcomes = await pool(n, s.concurrency, async (i) => {
    if (i === killAt) {
      await victim!.kill!('SIGKILL');
      killed = true;
    }
    const d = s.requests[i]!;
    const spec = SHAPE_SPECS[d.shape];
    const body = JSON.stringify(spec.body(d.maxTokens));
    const bytes = Buffer.byteLength(body);
    const price = priceOf(spec.provider, spec.model);
    const inputCap = Math.min(bytes + INPUT_OVERHEAD_TOKENS, price.contextWindow ?? Infinity);
    const input = d.input === undefined ? inputCap : bytes + (d.input % (inputCap - bytes + 1));
    const k = d.k % spec.events(1, 1).length;
    const holder = d.holder % HOLDERS.length;
    const billId = `n${i}`;
    const headers: Record<string, string> = {
      'x-proxy-token': tokens.get(`${holder}:${spec.provider}:${d.budgeted}`)!, 'x-bill-id': billId, 'x-bill-input': String(input),
      'x-bill-output': String(d.output % (d.maxTokens + 1)), 'x-bill-tool-uses': '0',
    };
    if (d.cut === 'provider') headers['x-bill-cut'] = String(k);
    if (d.cut === 'caller') headers['x-bill-pause'] = String(k);
    const want = bytesOfEvents(d.shape, k, 1, 1);
    let got = 0;
    const alive = killed ? g.apps.filter((a) => a !== victim) : g.apps;
    const app = alive[d.app % alive.length]!;
    const r = await send(app.url, {
      transport: d.transport, length: d.length, pieces: 1, path: `/v1/proxy/${spec.path}`, headers, body,
      onHead: (abort) => {
        if (d.cut === 'caller' && k === 0) abort();
      },
      onData: (chunk, abort) => {
        got += chunk.length;
        if (d.cut === 'caller' && got >= want) abort();
      },
    });
    const requestId = r.headers['x-keyward-request-id'];
    return { billId, holder, budgeted: d.budgeted, status: r.status, requestId: typeof requestId === 'string' ? requestId : undefined, toKilled: app === victim };
  });
  // What the provider billed per level; each request's charge is at least its bills.
  const billed = { org: 0, team: [0, 0], member: [[0, 0], [0, 0]], token: new Map<string, number>() };
  const charged = [0, 0];
  for (const o of outcomes) {
    check([200, 400, 429, 504].includes(o.status) || (o.toKilled && killed), `${o.billId} answered ${o.status}`);
    const cost = (g.fake.attempts.get(o.billId) ?? []).reduce((sum, bill) => sum + billCost(bill), 0);
    const [team, m] = HOLDERS[o.holder]!;
    const charge = o.toKilled && killed || o.requestId === undefined ? undefined : (await g.chargeOf(o.requestId)) ?? 0;
    if (charge !== undefined) check(charge >= cost, `${o.billId} charged ${charge} µ$ < billed ${cost} µ$`);
    if (team >= 0 && charge !== undefined) charged[team]! += charge;
    if (cost === 0) continue;
    billed.org += cost;
    if (team >= 0) {
      billed.team[team]! += cost;
      billed.member[team]![m]! += cost;
    }
    if (o.budgeted) billed.token.set(`${o.holder}`, (billed.token.get(`${o.holder}`) ?? 0) + cost);
  }
  check(billed.org <= s.orgCap, `the organisation's bills ${billed.org} µ$ passed its cap ${s.orgCap} µ$`);
  for (const team of [0, 1]) {
    const cap = s.teams[team];
    if (cap !== null) check(billed.team[team]! <= cap!, `team ${team}'s bills ${billed.team[team]} µ$ passed its budget ${cap} µ$`);
    for (const m of [0, 1]) {
      const mcap = s.members[team]![m];
      if (mcap !== null) check(billed.member[team]![m]! <= mcap!, `member ${memberId(team, m)}'s bills ${billed.member[team]![m]} µ$ passed its budget ${mcap} µ$`);
    }
    // One instance: the team's month settled exactly what the gateway charged its requests.
    if (instances === 1 && cap !== null) {
      const view = await admin('GET', `/v1/teams/${teamIds[team]}`);
      check(parseUsd(view.body.spend.used) === charged[team], `team ${team} shows ${view.body.spend.used} used, charged ${formatUsd(charged[team]!)}`);
    }
  }
  for (const [holder, sum] of billed.token) check(sum <= s.tokenBudget, `holder ${holder}'s budgeted tokens' bills ${sum} µ$ passed the token budget ${s.tokenBudget} µ$`);
  return `${instances} instance(s)${killAt >= 0 ? ` (one killed at request ${killAt})` : ''}, ${s.concurrency} at once: billed ${formatUsd(billed.org)} of ${formatUsd(s.orgCap)}; `
    + `teams ${billed.team.map((b, i) => `${formatUsd(b)}/${s.teams[i] === null ? '-' : formatUsd(s.teams[i]!)}`).join(', ')}; `
    + `members ${billed.member.flat().map((b, i) => `${formatUsd(b)}/${s.members.flat()[i] === null ? '-' : formatUsd(s.members.flat()[i]!)}`).join(', ')}; `
    + `answers ${outcomes.map((o) => o.status).join(' ')}`;
}

for (const instances of [1, 3]) {
  const runs = instances === 1 ? Math.ceil(SCENARIOS / 2) : Math.floor(SCENARIOS / 2);
  if (runs === 0) continue;
  test(`nested budget property: the provider's bills never pass a token's, member's or team's budget or the organisation's cap (${instances} instance${instances > 1 ? 's' : ''}, ${runs} scenario${runs > 1 ? 's' : ''}, seed ${SEED === undefined ? 'random' : SEED + instances})`, async (t) => {
    t.timeout(runs * 180_000 + 120_000);
    const summaries: string[] = [];
    await fc.assert(fc.asyncProperty(scenarioArb, async (s) => {
      const closers: Array<() => unknown> = [];
      const scope = { teardown: (fn: () => unknown) => closers.push(fn) } as unknown as ExecutionContext;
      try {
        summaries.push(await run(scope, s, instances));
      } finally {
        for (const fn of closers.reverse()) await fn();
      }
    }), { numRuns: runs, unbiased: true, includeErrorInReport: true, endOnFailure: process.env.KEYWARD_PROPERTY_SHRINK === '0', ...(SEED === undefined ? {} : { seed: SEED + instances }), ...(PATH ? { path: PATH } : {}) });
    for (const line of summaries) t.log(line);
    t.true(summaries.length > 0, 'the scenarios ran');
  });
}
