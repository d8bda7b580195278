/**
 * The scale row's numbers from one run's recorded document operations (test/support/emulator-ops.ts): write
 * rates per document (average over the run, its p99 over documents, the busiest 10 s window), operations
 * per million requests by kind and by what they are for, lease claims per second, the cost at list prices,
 * and exactness (the usage API and a token's usage against what the provider received).
 */
import type { Op } from '../../../test/support/emulator-ops.js';

/** Cloud Firestore (Standard edition) list prices per 100,000 operations, USD: nam5 multi-region; a US region is half. */
export const PRICES = { read: 0.06, write: 0.18, delete: 0.02 };

export interface RunInput {
  instances: number;
  rate: number;
  seconds: number;
  /** The span the recorded operations cover (the measured load, then the revocation's probes and the last answers). */
  opsSeconds: number;
  ops: Op[];
  t0: number;
  t1: number;
  statuses: Record<string, number>;
  /** Every answer to the budgeted token, warm-up included (exactness is checked against these). */
  allStatuses: Record<string, number>;
  /** From the revocation: when every instance had answered a probe with a refusal (the worst instance's), and when the last forwarded one was sent. */
  revokedAllMs: number;
  lastForwardedMs: number;
  received: number;
  victimForwarded: number;
  costMicros: number;
  /** The most a request can be charged (its reservation): what a request that failed upstream is charged. */
  worstMicros: number;
  usage: { proxy_requests: { used: number; held: number }; spend_usd: { used: string; held: string } };
  tokenUsage: { requests: number; spend_usd: string };
}

export interface RunResult {
  instances: number;
  rate: number;
  seconds: number;
  requests: number;
  /** Requests a second the driver reached (below `rate` when the machine could not keep up). */
  reached: number;
  statuses: Record<string, number>;
  /** Operations per instance and second of the run: the part of the cost that does not depend on traffic (mostly). */
  perInstanceSecond: { reads: number; writes: number; deletes: number };
  writesPerDoc: { max: number; p99: number; maxOver10s: number; busiest: string; docs: number };
  perMillion: { reads: number; writes: number; deletes: number; costUsd: number };
  writesBy: Record<string, number>;
  readsBy: Record<string, number>;
  leaseClaimsPerSecond: number;
  revokedAllMs: number;
  lastForwardedMs: number;
  exact: { requests: boolean; spend: boolean; token: boolean; detail: string };
}

/** What a document is for, from its path. */
function category(path: string): string {
  const kind = ((): string => {
    if (/^usage\/[^/]+\/shards\//.test(path)) return 'usage shards';
    if (/^usage\/[^/]+\/periods\//.test(path)) return 'usage periods';
    if (/^leases\/[^/]+\/holders\//.test(path)) return 'lease holders';
    if (/^leases\/[^/]+\/blocks\//.test(path)) return 'lease blocks';
    if (/^leases\/[^/]+\/returns\//.test(path)) return 'lease returns';
    if (path.startsWith('changes/')) return 'change feed';
    if (path.startsWith('audit_counts/')) return 'audit counts';
    if (path.startsWith('audit')) return 'audit';
    return path.split('/')[0]!;
  })();
  // An empty query's path is its collection's (ending in `/`): billed one read for nothing found.
  return path.endsWith('/') ? `${kind}, empty` : kind;
}

const micros = (usd: string) => Math.round(Number(usd) * 1_000_000);

export function analyse(run: RunInput): RunResult {
  const requests = Object.values(run.statuses).reduce((a, b) => a + b, 0);
  const byDoc = new Map<string, number[]>();
  const count = { read: 0, write: 0, delete: 0 };
  const writesBy: Record<string, number> = {};
  const readsBy: Record<string, number> = {};
  let claims = 0;
  for (const op of run.ops) {
    count[op.kind]++;
    const c = category(op.path);
    if (op.kind === 'read') {
      const by = `${c} (${op.via})`;
      readsBy[by] = (readsBy[by] ?? 0) + 1;
      continue;
    }
    writesBy[c] = (writesBy[c] ?? 0) + 1;
    if (c === 'lease blocks' && op.kind === 'write') claims++;
    let times = byDoc.get(op.path);
    if (!times) byDoc.set(op.path, (times = []));
    times.push(op.t);
  }
  const span = Math.max(run.seconds, run.opsSeconds);
  const rates = [...byDoc.values()].map((ts) => ts.length / span).sort((a, b) => a - b);
  let maxOver10s = 0;
  let busiest = '';
  for (const [path, ts] of byDoc) {
    ts.sort((a, b) => a - b);
    // Half-open windows [t, t + 10 s): a document written once a second on the dot counts 10.
    for (let i = 0, j = 0; i < ts.length; i++) {
      while (ts[i]! - ts[j]! >= 10_000) j++;
      const inWindow = (i - j + 1) / 10;
      if (inWindow > maxOver10s) {
        maxOver10s = inWindow;
        busiest = path;
      }
    }
  }
  const perMillion = (n: number) => (requests > 0 ? (n / requests) * 1e6 : 0);
  const costUsd = (perMillion(count.read) * PRICES.read + perMillion(count.write) * PRICES.write + perMillion(count.delete) * PRICES.delete) / 100_000;
  const cost = run.costMicros;
  const spend = micros(run.usage.spend_usd.used);
  const tokenSpend = micros(run.tokenUsage.spend_usd);
  const victim = run.victimForwarded;
  // Requests the gateway handed upstream but the provider never answered (an upstream failure under load) count as
  // forwarded and are charged their worst case: never below what the provider may have billed.
  // A connection error (0) may have been forwarded too.
  const failedUpstream = (run.allStatuses['502'] ?? 0) + (run.allStatuses['504'] ?? 0) + (run.allStatuses['0'] ?? 0);
  const used = run.usage.proxy_requests.used;
  const unanswered = used - run.received;
  return {
    instances: run.instances,
    rate: run.rate,
    seconds: Math.round(run.seconds * 10) / 10,
    requests,
    reached: Math.round((requests / run.seconds) * 10) / 10,
    statuses: run.statuses,
    perInstanceSecond: {
      reads: Math.round((count.read / span / run.instances) * 100) / 100,
      writes: Math.round((count.write / span / run.instances) * 100) / 100,
      deletes: Math.round((count.delete / span / run.instances) * 100) / 100,
    },
    writesPerDoc: { max: rates.at(-1) ?? 0, p99: rates[Math.floor(rates.length * 0.99)] ?? 0, maxOver10s, busiest, docs: byDoc.size },
    perMillion: { reads: Math.round(perMillion(count.read)), writes: Math.round(perMillion(count.write)), deletes: Math.round(perMillion(count.delete)), costUsd: Math.round(costUsd * 100) / 100 },
    writesBy,
    readsBy,
    leaseClaimsPerSecond: Math.round((claims / span) * 100) / 100,
    revokedAllMs: Math.round(run.revokedAllMs),
    lastForwardedMs: Math.round(run.lastForwardedMs),
    exact: {
      requests: unanswered >= 0 && unanswered <= failedUpstream && run.usage.proxy_requests.held === 0,
      spend: spend === run.received * cost + unanswered * run.worstMicros && micros(run.usage.spend_usd.held) === 0,
      token: run.tokenUsage.requests === used - victim && tokenSpend === (run.tokenUsage.requests - unanswered) * cost + unanswered * run.worstMicros,
      detail: `provider ${run.received} (victim ${victim}); usage ${used} used / ${run.usage.proxy_requests.held} held, ${failedUpstream} failed upstream; spend ${spend} µ$ of ${run.received * cost}; token ${run.tokenUsage.requests} requests, ${tokenSpend} µ$`,
    },
  };
}

export function formatReport(results: RunResult[]): string {
  const rows = results.map((r) => `| ${r.instances} | ${r.requests} in ${r.seconds} s (${r.reached}/s) | ${r.writesPerDoc.max.toFixed(2)} / ${r.writesPerDoc.p99.toFixed(2)} / ${r.writesPerDoc.maxOver10s.toFixed(1)} | ${r.perMillion.reads.toLocaleString('en')} | ${r.perMillion.writes.toLocaleString('en')} | ${r.perMillion.deletes.toLocaleString('en')} | $${r.perMillion.costUsd} | ${r.leaseClaimsPerSecond} | ${r.revokedAllMs} ms (last forwarded: ${r.lastForwardedMs} ms) | ${r.exact.requests && r.exact.spend && r.exact.token ? 'exact' : `NOT EXACT: ${r.exact.detail}`} |`);
  return [
    '| instances | requests | writes/s per doc: max / p99 / busiest 10 s | reads per 1M requests | writes per 1M | deletes per 1M | cost per 1M (nam5 list) | lease claims/s | revoked on every instance (probes sent after) | quota, spend, token |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** What each run's operations were for, per million requests and per instance-second. */
export function formatBreakdown(results: RunResult[]): string {
  const kinds = [...new Set(results.flatMap((r) => [...Object.keys(r.writesBy).map((k) => `write: ${k}`), ...Object.keys(r.readsBy).map((k) => `read: ${k}`)]))].sort();
  const per = (r: RunResult, kind: string) => {
    const [op, what] = [kind.slice(0, kind.indexOf(':')), kind.slice(kind.indexOf(':') + 2)];
    const n = (op === 'write' ? r.writesBy : r.readsBy)[what] ?? 0;
    return n === 0 ? '' : `${Math.round((n / r.requests) * 1e6).toLocaleString('en')}`;
  };
  return [
    `| operation (writes include deletes) | ${results.map((r) => `${r.instances} instances, per 1M requests`).join(' | ')} |`,
    `|---|${results.map(() => '---|').join('')}`,
    ...kinds.map((k) => `| ${k} | ${results.map((r) => per(r, k)).join(' | ')} |`),
    `| **per instance and second: reads / writes / deletes** | ${results.map((r) => `${r.perInstanceSecond.reads} / ${r.perInstanceSecond.writes} / ${r.perInstanceSecond.deletes}`).join(' | ')} |`,
  ].join('\n');
}
