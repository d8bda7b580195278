/**
 * The bench's spend-budget row: on the same Keyward process, a token with `budget_usd` against one
 * without, same body, interleaved rounds of c=1 latency and saturation; the row is the budgeted
 * token's throughput and its added p50 over the unbudgeted one (and, for reference, a `models`-scoped
 * token's: the body read before forwarding, which a budget needs too), and a `tokens_per_minute` token's. What it costs: the body read whole
 * before forwarding, a price lookup, a reservation from memory and its settlement.
 *
 * The bench's OpenAI upstream is the fake provider; `gpt-4o-mini` gets a price here when the provider
 * file carries none (a wrapper provider file over the built one), so the row runs on any branch.
 */
import { readdirSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { LatencyResult, SatResult, Target } from './lib/load.js';
import { ADMIN_TOKEN, ROOT, type LoadWorker } from './lib/servers.js';

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

/** A providers folder: the built ones, with openai wrapped to price gpt-4o-mini if it prices nothing. */
export function budgetProvidersDir(tmp: string): string {
  const dir = path.join(tmp, 'providers');
  mkdirSync(dir, { recursive: true });
  const built = path.join(ROOT, 'dist/providers');
  for (const f of readdirSync(built).filter((f) => f.endsWith('.js') && f !== 'openai.js')) symlinkSync(path.join(built, f), path.join(dir, f));
  writeFileSync(path.join(dir, 'openai.js'), [
    `import base from ${JSON.stringify(pathToFileURL(path.join(built, 'openai.js')).href)};`,
    `export default { ...base, prices: base.prices ?? { 'gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6, maxOutput: 16384, contextWindow: 128000 } }, pricesAsOf: base.pricesAsOf ?? '2026-11-01' };`,
  ].join('\n'));
  return dir;
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
