/**
 * The spend-budget row: on the same Keyward process, a token with `budget_usd` against one
 * without, same body, interleaved rounds of c=1 latency and saturation; the row is the budgeted
 * token's throughput and its added p50 over the unbudgeted one (and, for reference, a `models`-scoped
 * token's: the body read before forwarding, which a budget needs too), and a `tokens_per_minute` token's. What it costs: the body read whole
 * before forwarding, a price lookup, a reservation from memory and its settlement.
 *
 * The bench's OpenAI upstream is the fake provider; `gpt-4o-mini` gets a price when the provider
 * file carries none (pricedProvidersDir in bench/lib/servers.ts), so the row runs on any branch.
 *
 * Alone: `npm run bench -- budget [dist…]` runs it on one fresh Keyward per build named (default dist), one
 * after the other: the ratios within one build are what to compare; absolute req/s move with the machine
 * between builds. A build may be named more than once (A B A B).
 *   e.g. cp -r dist bench/.ab/base/dist, change, npm run build, npm run bench -- budget bench/.ab/base/dist dist
 */
import path from 'node:path';
import type { LatencyResult, SatResult, Target } from '../lib/load.js';
import { startSideKeyward } from '../lib/paths.js';
import { fmt, type Goal } from '../lib/report.js';
import { ADMIN_TOKEN, LoadWorker } from '../lib/servers.js';
import { BODY, D, KEY, log, sideOptions } from '../lib/settings.js';
import { standaloneSide } from '../lib/standalone.js';

export interface BudgetRow {
  plain: { p50: number; rps: number };
  /** A `models`-scoped token: the body scan without the budget (what reading a body before forwarding costs). */
  scoped: { p50: number; rps: number };
  budgeted: { p50: number; rps: number };
  /** A `tokens_per_minute` token (a cap far above the load, so nothing is refused): its worst case reserved and settled per request. */
  tpm: { p50: number; rps: number };
  /** Budgeted p50 minus unbudgeted p50, ms. */
  addedP50Ms: number;
  /** Budgeted req/s ÷ unbudgeted req/s. */
  rpsRatio: number;
  /** tokens_per_minute req/s ÷ unbudgeted req/s. */
  tpmRpsRatio: number;
}

async function post(url: string, token: string, body: unknown): Promise<any> {
  const r = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status !== 201) throw new Error(`POST ${url}: ${r.status} ${text}`);
  return JSON.parse(text);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Runs the row on `worker` against Keyward at `base`; `rounds` rounds of c=1 (`c1Ms`) and saturation (`satS`) per token. */
export async function budgetRow(worker: LoadWorker, base: string, key: string, body: string, o: { rounds: number; c1Ms: number; satS: number; connections: number }, log: (m: string) => void): Promise<BudgetRow> {
  const org = await post(`${base}/v1/orgs`, ADMIN_TOKEN, { name: 'bench-budget' });
  const cred = await post(`${base}/v1/credentials`, org.token, { provider: 'openai', api_key: key });
  const plain = (await post(`${base}/v1/tokens`, org.token, { credential_id: cred.id, ttl: '1d' })).token as string;
  const budgeted = (await post(`${base}/v1/tokens`, org.token, { credential_id: cred.id, ttl: '1d', budget_usd: '1000000000' })).token as string;
  const scoped = (await post(`${base}/v1/tokens`, org.token, { credential_id: cred.id, ttl: '1d', models: [JSON.parse(body).model] })).token as string;
  const tpm = (await post(`${base}/v1/tokens`, org.token, { credential_id: cred.id, ttl: '1d', tokens_per_minute: 1_000_000_000 })).token as string;
  const tokens = { plain, scoped, budgeted, tpm };
  const target = (token: string): Target => ({ url: `${base}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': token }, body });
  const p50 = { plain: [] as number[], scoped: [] as number[], budgeted: [] as number[], tpm: [] as number[] };
  const rps = { plain: [] as number[], scoped: [] as number[], budgeted: [] as number[], tpm: [] as number[] };
  const order = ['plain', 'scoped', 'budgeted', 'tpm'] as const;
  for (let round = 0; round < o.rounds; round++) {
    for (let j = 0; j < order.length; j++) {
      const name = order[(j + round) % order.length]!;
      const t = target(tokens[name]);
      const c1 = await worker.run<LatencyResult>({ mode: 'c1', target: t, durationMs: o.c1Ms, warmupMs: 200 });
      const sat = await worker.run<SatResult>({ mode: 'sat', target: t, connections: o.connections, durationS: o.satS, warmupS: round === 0 ? 1 : 0 });
      if (c1.errors + c1.non2xx + sat.errors + sat.non2xx > 0) throw new Error(`budget row: ${name} token had failed requests (is gpt-4o-mini priced?)`);
      p50[name].push(c1.latency.p50);
      rps[name].push(sat.rps);
      log(`budget    ${name.padEnd(8)} c=1 p50 ${c1.latency.p50.toFixed(3)} ms, ${sat.rps.toFixed(0)} req/s`);
    }
  }
  const row = {
    plain: { p50: median(p50.plain), rps: median(rps.plain) },
    scoped: { p50: median(p50.scoped), rps: median(rps.scoped) },
    budgeted: { p50: median(p50.budgeted), rps: median(rps.budgeted) },
    tpm: { p50: median(p50.tpm), rps: median(rps.tpm) },
  };
  return { ...row, addedP50Ms: row.budgeted.p50 - row.plain.p50, rpsRatio: row.budgeted.rps / row.plain.rps, tpmRpsRatio: row.tpm.rps / row.plain.rps };
}

/** The row's line in the bench's tables. */
export const budgetSummary = (b: BudgetRow, rounds: number): string =>
  `Spend budget (same Keyward, same body; c=1 p50 and saturation req/s, median of ${rounds} rounds): unbudgeted ${fmt(b.plain.p50, 3)} ms, ${fmt(b.plain.rps, 0)} req/s; models-scoped (body read first) ${fmt(b.scoped.p50, 3)} ms, ${fmt(b.scoped.rps, 0)} req/s; budgeted ${fmt(b.budgeted.p50, 3)} ms (+${fmt(b.addedP50Ms, 3)} ms), ${fmt(b.budgeted.rps, 0)} req/s (${b.rpsRatio.toFixed(2)}×); tokens_per_minute ${fmt(b.tpm.p50, 3)} ms, ${fmt(b.tpm.rps, 0)} req/s (${b.tpmRpsRatio.toFixed(2)}×).`;

export const budgetTargets = (b: BudgetRow): Goal[] => [
  { target: 'budgeted token throughput ≥ 0.90× an unbudgeted one', value: `${b.rpsRatio.toFixed(2)}×`, met: b.rpsRatio >= 0.9 },
  { target: 'tokens_per_minute token throughput ≥ 0.90× an unlimited one', value: `${b.tpmRpsRatio.toFixed(2)}×`, met: b.tpmRpsRatio >= 0.9 },
];

/** `npm run bench -- budget [dist…]`: the row alone, on one fresh Keyward per build named (default: dist). */
export async function run(args: string[]): Promise<void> {
  const dists = args.length ? args : ['dist'];
  await standaloneSide('budget', async (s, up) => {
    const worker = new LoadWorker('keyward');
    s.closers.push(() => worker.close());
    const builds: Array<{ dist: string; budget: BudgetRow }> = [];
    // Each build its own Keyward and folders, started once the one before has stopped.
    for (const [i, dist] of dists.entries()) {
      const keyward = await startSideKeyward(s, up, args.length ? { name: `build-${i}`, main: path.resolve(dist, 'src/main.js') } : {});
      builds.push({ dist, budget: await budgetRow(worker, `http://127.0.0.1:${keyward.port}`, KEY, BODY, sideOptions(), log) });
      await keyward.stop();
    }
    return {
      fields: args.length ? { builds } : { budget: builds[0]!.budget },
      lines: builds.map((b) => `${args.length ? `${b.dist}: ` : ''}${budgetSummary(b.budget, D.sideRounds)}`),
      targets: builds.flatMap((b) => budgetTargets(b.budget).map((t) => ({ ...t, target: args.length ? `${t.target} (${b.dist})` : t.target }))),
    };
  });
}
