/**
 * Property: whatever the mix, what the provider bills never passes a token's budget_usd or its
 * organisation's spend_limit_usd, and the tokens it bills a token with tokens_per_minute never pass that
 * cap within any 60 s. Random scenarios from a fixed seed: 1 or 3 instances (in this process,
 * over one store), tokens with and without budgets under an organisation cap, and requests of every
 * stream shape over HTTP/1.1 or h2c (with or without content-length), with provider-side tools (bounded,
 * and not), at 1 to 16 at once, each ending whole, cut by the provider or left by the caller after a random
 * event. The billing fake bills as a provider may: input up to what the gateway bounds it by (the body's
 * bytes plus the overhead; the context window with tools), tool uses up to the request's limit, output up to
 * the cap whenever it was cut before its final usage. Every request's charge is also checked against its bill.
 *
 * With 3 instances, they are child processes of the built server and one is killed (SIGKILL) at a random
 * request: what it had in flight is cut by its death, the others go on; the bills, its own included, still
 * never pass a budget or the cap (its holders keep what they had armed counted as used).
 *
 * `npm test` runs a short fixed-seed set (KEYWARD_PROPERTY_SCENARIOS, default 2: one of each instance count);
 * `npm run test:fuzz` runs many more. KEYWARD_PROPERTY_SEED changes the seed; a failure names it;
 * KEYWARD_PROPERTY_SPAWN=0 keeps 3 instances in this process (none killed).
 */
import test from 'ava';
import { formatUsd } from '../../src/catalog/money.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/catalog/spend-bound.js';
import { api } from '../support/app.js';
import { billCost, billingGateway, priceOf, type BillingGateway } from '../support/billing-gateway.js';
import { bytesOfEvents, SHAPE_SPECS, SHAPES, type StreamShape } from '../support/billing-provider.js';
import { pool } from '../support/pool.js';
import { prng, type Rng } from '../support/prng.js';
import { send } from '../support/transport.js';

const SCENARIOS = Number(process.env.KEYWARD_PROPERTY_SCENARIOS ?? 2);
const REQUESTS = Number(process.env.KEYWARD_PROPERTY_REQUESTS ?? 40);
const SEED = Number(process.env.KEYWARD_PROPERTY_SEED ?? 0xb0d9e7);
/** Several instances are child processes of the built server (so one can be killed) unless KEYWARD_PROPERTY_SPAWN=0. */
const SPAWN = process.env.KEYWARD_PROPERTY_SPAWN !== '0';

/** A provider-side tool a request may use: what it adds to the body, its fee and how many uses the body allows (none: unbounded). */
interface ToolUse {
  extra: Record<string, unknown>;
  perUseMicros?: number;
  maxUses?: number;
}

const claudeSearch = (rng: Rng): ToolUse => {
  const uses = 1 + rng.int(3);
  return { extra: { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: uses }] }, perUseMicros: 10_000, maxUses: uses };
};
const TOOLS: Partial<Record<StreamShape, Array<(rng: Rng) => ToolUse>>> = {
  'anthropic': [claudeSearch, () => ({ extra: { tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] } })],
  'vertex-anthropic': [claudeSearch],
  'bedrock-invoke': [claudeSearch],
  'openai-responses': [(rng) => {
    const calls = 1 + rng.int(3);
    return { extra: { tools: [{ type: 'web_search' }], max_tool_calls: calls }, perUseMicros: 25_000, maxUses: calls };
  }],
  'openai-chat': [() => ({ extra: { web_search_options: {} } })],
  'gemini': [() => ({ extra: { tools: [{ googleSearch: {} }] }, perUseMicros: 35_000, maxUses: 1 })],
  'vertex-gemini': [() => ({ extra: { tools: [{ urlContext: {} }] }, perUseMicros: 0, maxUses: 0 })],
};

interface Outcome {
  /** `<provider>:<budget index>`: each provider's credential has a token per budget. */
  token: string;
  billId: string;
  status: number;
  requestId: string | undefined;
  perUseMicros: number;
  /** Sent to the instance that was killed: what it charged died with it (its holders keep it counted as used). */
  toKilled: boolean;
}

async function scenario(t: import('ava').ExecutionContext, seed: number, instances: number): Promise<string> {
  const rng = prng(seed);
  const g: BillingGateway = await billingGateway(t, { instances, spawn: SPAWN && instances > 1 });
  // The organisation's cap is set before any request, so every instance starts from it.
  const orgCap = 50_000 + rng.int(3_000_000);
  t.is((await api(g.apps[0]!.url, 'PATCH', '/v1/orgs/self', { token: g.org.token, body: { spend_limit_usd: formatUsd(orgCap) } })).status, 200);
  const budgets = [20_000 + rng.int(400_000), 20_000 + rng.int(1_000_000), undefined];
  const shapes = SHAPES;
  // A fourth token per provider has a tokens_per_minute cap instead (the same gate, reservation and settlement).
  // Small enough that a few requests reach it (a request with provider-side tools reserves a context window: refused).
  const perMinute = 4_000 + rng.int(20_000);
  const scopes = [...budgets.map((b) => (b === undefined ? {} : { budget_usd: formatUsd(b) })), { tokens_per_minute: perMinute }];
  const TPM = scopes.length - 1;
  const tokens: Record<string, Array<{ id: string; token: string }>> = {};
  for (const provider of ['anthropic', 'openai', 'gemini', 'bedrock', 'vertex'] as const) {
    tokens[provider] = [];
    for (const s of scopes) tokens[provider]!.push(await g.token(provider, s));
  }
  const concurrency = rng.pick([1, 4, 16]);
  // One instance of several is killed when request `killAt` is about to be sent.
  const victim = instances > 1 ? g.apps[instances - 1]! : undefined;
  const killAt = victim?.kill ? 1 + rng.int(REQUESTS - 1) : -1;
  let killed = false;
  const outcomes = await pool(REQUESTS, concurrency, async (i): Promise<Outcome> => {
    if (i === killAt) {
      await victim!.kill!('SIGKILL');
      killed = true;
    }
    const shape = rng.pick(shapes);
    const spec = SHAPE_SPECS[shape];
    const maxTokens = 16 + rng.int(4000);
    const menu = TOOLS[shape];
    const tool = menu && rng.chance(0.3) ? rng.pick(menu)(rng) : undefined;
    const body = JSON.stringify(spec.body(maxTokens, tool?.extra));
    const bytes = Buffer.byteLength(body);
    const price = priceOf(spec.provider, spec.model);
    // What the provider may bill as input: up to the gateway's bound for it.
    const inputCap = tool ? price.contextWindow! : Math.min(bytes + INPUT_OVERHEAD_TOKENS, price.contextWindow ?? Infinity);
    const input = rng.chance(0.5) ? inputCap : bytes + rng.int(inputCap - bytes + 1);
    const n = spec.events(1, 1).length;
    const cut = rng.pick(['none', 'none', 'provider', 'caller'] as const);
    const k = rng.int(n);
    const tokenIndex = rng.int(scopes.length);
    const billId = `s${seed}-r${i}`;
    const headers: Record<string, string> = {
      'x-proxy-token': tokens[spec.provider]![tokenIndex]!.token, 'x-bill-id': billId, 'x-bill-input': String(input),
      'x-bill-output': String(rng.int(maxTokens + 1)), 'x-bill-tool-uses': String(tool?.maxUses === undefined ? 0 : rng.int(tool.maxUses + 1)),
    };
    if (cut === 'provider') headers['x-bill-cut'] = String(k);
    if (cut === 'caller') headers['x-bill-pause'] = String(k);
    const transport = rng.pick(['h1', 'h2c'] as const);
    const want = bytesOfEvents(shape, k, 1, 1);
    let got = 0;
    const alive = killed ? g.apps.filter((a) => a !== victim) : g.apps;
    const app = alive[rng.int(alive.length)]!;
    const r = await send(app.url, {
      transport, length: rng.chance(0.5), pieces: rng.chance(0.2) ? 3 : 1, path: `/v1/proxy/${spec.path}`, headers, body,
      onHead: (abort) => {
        if (cut === 'caller' && k === 0) abort();
      },
      onData: (chunk, abort) => {
        got += chunk.length;
        // Event sizes differ with the counts they carry: leaving once at least k events' worth arrived is near enough.
        if (cut === 'caller' && got >= want) abort();
      },
    });
    const requestId = r.headers['x-keyward-request-id'];
    return { token: `${spec.provider}:${tokenIndex}`, billId, status: r.status, requestId: typeof requestId === 'string' ? requestId : undefined, perUseMicros: tool?.perUseMicros ?? 0, toKilled: app === victim };
  });
  // What the provider billed, per token and in all; each forwarded request's charge is at least its bill.
  const billed = new Map<string, number>();
  let total = 0;
  const statuses = new Map<number, number>();
  for (const o of outcomes) {
    statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1);
    // A request to the instance that was killed may have died with it (no answer, or a cut one).
    t.true([200, 400, 429].includes(o.status) || (o.toKilled && killed), `seed ${seed}: ${o.billId} answered ${o.status}`);
    const bill = g.fake.bills.get(o.billId);
    if (!bill) continue;
    const cost = billCost(bill, o.perUseMicros);
    billed.set(o.token, (billed.get(o.token) ?? 0) + cost);
    total += cost;
    if (o.toKilled && killed) continue;
    const charged = (await g.chargeOf(o.requestId!)) ?? 0;
    t.true(charged >= cost, `seed ${seed}: ${o.billId} charged ${charged} µ$ < billed ${cost} µ$`);
  }
  for (const [token, sum] of billed) {
    const budget = budgets[Number(token.split(':')[1])];
    if (budget !== undefined) t.true(sum <= budget, `seed ${seed}: token ${token}'s bills ${sum} µ$ passed its budget ${budget} µ$`);
  }
  t.true(total <= orgCap, `seed ${seed}: the organisation's bills ${total} µ$ passed its cap ${orgCap} µ$`);
  // tokens_per_minute: the tokens each provider's capped token had billed (input + output) within any 60 s never pass it.
  let mostPerMinute = 0;
  for (const provider of Object.keys(tokens)) {
    const uses = outcomes.filter((o) => o.token === `${provider}:${TPM}`).flatMap((o) => {
      const bill = g.fake.bills.get(o.billId);
      return bill ? [{ at: bill.at, tokens: bill.input + bill.output }] : [];
    }).sort((x, y) => x.at - y.at);
    for (let j = 0, i = 0, sum = 0; j < uses.length; j++) {
      sum += uses[j]!.tokens;
      while (uses[j]!.at - uses[i]!.at >= 60_000) sum -= uses[i++]!.tokens;
      mostPerMinute = Math.max(mostPerMinute, sum);
      t.true(sum <= perMinute, `seed ${seed}: ${provider}'s tokens_per_minute token had ${sum} tokens billed within 60 s, cap ${perMinute}`);
    }
  }
  return `seed ${seed}, ${instances} instance(s)${killAt >= 0 ? ` (one killed at request ${killAt})` : ''}, ${concurrency} at once: ${g.fake.bills.size}/${REQUESTS} forwarded, billed ${formatUsd(total)} of ${formatUsd(orgCap)} USD (most by one budgeted token: ${formatUsd(Math.max(0, ...[...billed].filter(([k]) => budgets[Number(k.split(':')[1])] !== undefined).map(([, v]) => v)))}; most tokens within 60 s by a tokens_per_minute token: ${mostPerMinute} of ${perMinute}); answers ${[...statuses].map(([s, c]) => `${s}×${c}`).join(' ')}`;
}

for (let s = 0; s < SCENARIOS; s++) {
  const seed = SEED + s;
  const instances = s % 2 === 0 ? 1 : 3;
  test(`budget property: the provider's bills never pass a token's budget or the organisation's cap (seed ${seed}, ${instances} instance${instances > 1 ? 's' : ''})`, async (t) => {
    t.timeout(120_000);
    t.log(await scenario(t, seed, instances));
  });
}
