/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time per function
 * and per area (Keyward's own code, http-proxy-3, pino, lru-cache, Node's http
 * internals, GC…), and two side by side. `npm run bench -- profile show <file.cpuprofile> [top=30]` prints it.
 */
import { readFileSync } from 'node:fs';

interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface Node { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

export interface Row { name: string; where: string; area: string; selfMs: number; pct: number }

export function area(url: string, fn: string): string {
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(idle)' || fn === '(program)' || fn === '(root)') return fn;
  if (url.includes('/http-proxy-3/')) return 'http-proxy-3';
  if (url.includes('/pino') || url.includes('/sonic-boom/') || url.includes('fast-safe-stringify') || url.includes('quick-format')) return 'pino';
  if (url.includes('/lru-cache/')) return 'lru-cache';
  if (url.includes('/tsyringe/')) return 'tsyringe';
  if (url.includes('/node_modules/')) return 'other npm';
  if (url.includes('/dist/plugins/')) return 'keyward plugins';
  if (url.includes('/dist/src/gateway/')) return 'keyward gateway';
  if (url.includes('/dist/src/')) return 'keyward other';
  if (url.startsWith('node:_http') || url.includes('node:http')) return 'node http';
  if (url.startsWith('node:internal/streams') || url.startsWith('node:stream')) return 'node streams';
  if (url.startsWith('node:net') || url.startsWith('node:internal/stream_base') || url.startsWith('node:internal/net')) return 'node net';
  if (url.startsWith('node:')) return 'node other';
  if (url === '') return 'native/builtin';
  return 'other';
}

export function summarise(file: string): { rows: Row[]; areas: Array<{ area: string; selfMs: number; pct: number }>; totalMs: number; busyMs: number } {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const fns = new Map<string, Row>();
  const areas = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const { functionName, url, lineNumber } = n.callFrame;
    const name = functionName || '(anonymous)';
    const short = url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/');
    const key = `${name}@${short}:${lineNumber + 1}`;
    const a = area(url, name);
    const row = fns.get(key) ?? { name, where: `${short}:${lineNumber + 1}`, area: a, selfMs: 0, pct: 0 };
    row.selfMs += us / 1000;
    fns.set(key, row);
    areas.set(a, (areas.get(a) ?? 0) + us / 1000);
    total += us / 1000;
  }
  const idle = areas.get('(idle)') ?? 0;
  const busy = total - idle;
  const rows = [...fns.values()].filter((r) => r.name !== '(idle)').sort((a, b) => b.selfMs - a.selfMs);
  for (const r of rows) r.pct = (100 * r.selfMs) / busy;
  const areaRows = [...areas].filter(([a]) => a !== '(idle)').map(([a, ms]) => ({ area: a, selfMs: ms, pct: (100 * ms) / busy })).sort((a, b) => b.selfMs - a.selfMs);
  return { rows, areas: areaRows, totalMs: total, busyMs: busy };
}

export function render(file: string, top = 30): string {
  const s = summarise(file);
  const out: string[] = [];
  out.push(`profile ${file}: ${(s.totalMs / 1000).toFixed(1)} s sampled, ${(s.busyMs / 1000).toFixed(1)} s busy (${((100 * s.busyMs) / s.totalMs).toFixed(0)}%)`);
  out.push('', 'self time by area (% of busy):');
  for (const a of s.areas) out.push(`  ${a.pct.toFixed(1).padStart(5)}%  ${a.selfMs.toFixed(0).padStart(7)} ms  ${a.area}`);
  out.push('', `top ${top} functions by self time (% of busy):`);
  for (const r of s.rows.slice(0, top)) out.push(`  ${r.pct.toFixed(1).padStart(5)}%  ${r.name.slice(0, 40).padEnd(40)}  ${r.area.padEnd(16)} ${r.where}`);
  return out.join('\n');
}

/** Two profiles side by side (Markdown): self time by area, as % of each one's busy time. */
export function compare(before: string, after: string): string {
  const a = summarise(before);
  const b = summarise(after);
  const pct = (rows: Array<{ area: string; pct: number }>, area: string) => rows.find((r) => r.area === area)?.pct ?? 0;
  const areas = [...new Set([...a.areas, ...b.areas].map((r) => r.area))].sort((x, y) => pct(b.areas, y) + pct(a.areas, y) - pct(b.areas, x) - pct(a.areas, x));
  const out = ['| area | before % of busy | after % of busy |', '|---|---|---|'];
  for (const area of areas) out.push(`| ${area} | ${pct(a.areas, area).toFixed(1)} | ${pct(b.areas, area).toFixed(1)} |`);
  return out.join('\n');
}
