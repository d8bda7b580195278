/**
 * Writes a Markdown before/after summary of CPU profiles of the proxied-request hot path
 * (bench/results/profile-<date>.md was made with it): for each pair, the inclusive time of the
 * functions the performance rounds touched, self time by area side by side, and the after
 * profile's top functions; optionally single "reference" profiles at the end.
 *   npm run bench -- profile summary <json before> <json after> <sse before> <sse after> [<json ref> <sse ref>]
 * (profiles from `npm run bench -- profile`, `BENCH_MAIN=<before build>/src/main.js` for before)
 */
import { readFileSync } from 'node:fs';
import { summarise, compare } from '../../lib/cpuprofile.js';

function inclusive(file: string, fns: string[]): Map<string, number> {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map<number, any>(p.nodes.map((n: any) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  let busy = 0;
  const out = new Map(fns.map((f) => [f, 0]));
  for (const [id, us] of self) {
    const n = byId.get(id);
    if (n.callFrame.functionName === '(idle)') continue;
    busy += us;
    const seen = new Set<string>();
    for (let c: number | undefined = id; c !== undefined; c = parent.get(c)) {
      const cf = byId.get(c).callFrame;
      const key = `${cf.functionName}@${cf.url.split('/').slice(-2).join('/')}`;
      for (const f of fns) if (!seen.has(f) && key.startsWith(f)) { seen.add(f); out.set(f, out.get(f)! + us); }
    }
  }
  for (const f of fns) out.set(f, (100 * out.get(f)!) / busy);
  return out;
}
const focus: Array<[string, string]> = [
  ['flushHeaders@node:_http_outgoing', 'response head written alone (flushHeaders)'],
  ['actualWrite@sonic-boom/index.js', 'log line write (sonic-boom actualWrite, all calls)'],
  ['LOG@lib/tools.js', 'pino LOG (serialise + write)'],
  ['removeHeader@node:_http_outgoing', 'ServerResponse.removeHeader (writeHead slow path)'],
  ['appendHeader@node:_http_outgoing', 'ServerResponse.appendHeader (writeHead slow path)'],
  ['scan@gateway/wire/usage-scanner.js', 'usage reader scan'],
  ['push@gateway/wire/masking.js', 'masker push'],
  ['normaliseProviderPath@catalog/path.js', 'normaliseProviderPath'],
  ['timestamp@src/log.js', 'log time stamp'],
  ['stream@passes/web-incoming.js', 'http-proxy-3 stream() (incl. http.request)'],
  ['request@node:http', 'http.request (ClientRequest)'],
  ['onProxyRes@gateway/upstream/upstream.js', 'onProxyRes (head, masks, relay set-up)'],
  ['logAll@gateway/pipeline/pipeline.js', 'pipeline log hooks'],
  ['access@gateway/pipeline/pipeline.js', 'pipeline access stages'],
];

export async function summary(args: string[]): Promise<void> {
  const [jb, ja, sb, sa, jq, sq] = args;
  if (!jb || !ja || !sb || !sa) throw new Error('profile summary: <json before> <json after> <sse before> <sse after> [<json ref> <sse ref>]');
  const lines: string[] = [];
  const table = (title: string, b: string, a: string) => {
    const ib = inclusive(b, focus.map((f) => f[0]));
    const ia = inclusive(a, focus.map((f) => f[0]));
    const sbm = summarise(b), sam = summarise(a);
    lines.push(`### ${title}`, '', `before: ${b.split('/').pop()} (${(sbm.busyMs / 1000).toFixed(1)} s busy); after: ${a.split('/').pop()} (${(sam.busyMs / 1000).toFixed(1)} s busy)`, '', 'Inclusive time of the functions this round changed or that matter, % of busy time:', '', '| function | before | after |', '|---|---|---|');
    for (const [k, label] of focus) lines.push(`| ${label} | ${ib.get(k)!.toFixed(1)} | ${ia.get(k)!.toFixed(1)} |`);
    lines.push('', 'Self time by area, % of busy time:', '', compare(b, a), '');
    lines.push('Top 15 functions by self time, after:', '', '```');
    for (const r of sam.rows.slice(0, 15)) lines.push(`${r.pct.toFixed(1).padStart(5)}%  ${r.name.slice(0, 34).padEnd(34)} ${r.area.padEnd(16)} ${r.where}`);
    lines.push('```', '');
  };
  table('JSON chat completion (64 connections, 8 s)', jb, ja);
  table('SSE, 20 events per response (64 connections, 8 s)', sb, sa);
  const quiet = (title: string, f: string) => {
    const s = summarise(f);
    lines.push(`### ${title}`, '', `${f.split('/').pop()}: ${(s.busyMs / 1000).toFixed(1)} s busy`, '', '```');
    for (const a of s.areas) lines.push(`${a.pct.toFixed(1).padStart(5)}%  ${a.area}`);
    lines.push('', 'top 20 functions by self time:');
    for (const r of s.rows.slice(0, 20)) lines.push(`${r.pct.toFixed(1).padStart(5)}%  ${r.name.slice(0, 34).padEnd(34)} ${r.area.padEnd(16)} ${r.where}`);
    lines.push('```', '');
  };
  if (jq) quiet('Before, JSON, at load average 1.9 (the profile this round started from)', jq);
  if (sq) quiet('Before, SSE 20 events, at load average 1.5', sq);
  process.stdout.write(lines.join('\n') + '\n');
}
