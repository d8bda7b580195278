/**
 * The syscalls row: system calls per proxied request, by `strace -f -c` attached to the server
 * process during 3 s of load at 16 connections (after a 2 s warm-up). Unlike
 * req/s or CPU time, the count barely moves with the machine's other load, so
 * it is the A/B number to trust on a shared machine for changes that add or
 * remove writes (a response head written alone, a log line per request…).
 *
 *   npm run bench -- syscalls [bare|<dist dir>|<dist dir>:pool…]   default: bare dist
 *   (`:pool`: through a pooled token, a round-robin pool of three healthy keys, instead of a plain one;
 *   `:budget`: a token with `budget_usd`, its model priced as in the budget row)
 *   BENCH_SYSCALLS_SSE=N  SSE responses of N events instead of the JSON completion
 * Needs strace (apt-get install -y strace) and ptrace permission.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SatResult } from '../lib/load.js';
import { ROOT, pricedProvidersDir, provision, provisionPool, runLoad, sleep, startBare, startFake, startKeyward, type Proc } from '../lib/servers.js';

import { BODY, KEY } from '../lib/settings.js';

async function count(proc: Proc, target: { url: string; headers: Record<string, string>; body: string }, out: string): Promise<{ requests: number; calls: Map<string, number> }> {
  await runLoad<SatResult>({ mode: 'sat', target, connections: 16, durationS: 2, warmupS: 0 });
  const strace = spawn('strace', ['-f', '-c', '-p', String(proc.proc.pid), '-o', out], { stdio: 'ignore' });
  await sleep(500);
  const r = await runLoad<SatResult>({ mode: 'sat', target, connections: 16, durationS: 3, warmupS: 0 });
  strace.kill('SIGINT');
  await new Promise((res) => strace.once('exit', res));
  const calls = new Map<string, number>();
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    // % time, seconds, usecs/call, calls, [errors], syscall
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(line);
    if (m && m[2] !== 'total') calls.set(m[2]!, Number(m[1]));
  }
  return { requests: r.total, calls };
}

export async function run(args: string[]): Promise<void> {
  if (spawnSync('strace', ['-V']).error) throw new Error('strace is not installed (apt-get install -y strace)');
  const variants = args.length ? args : ['bare', 'dist'];
  const sse = process.env.BENCH_SYSCALLS_SSE;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'keyward-syscalls-'));
  const fake = await startFake();
  try {
    process.stdout.write(`${sse ? `SSE, ${sse} events` : 'JSON'}: system calls per request (strace -f -c, 3 s at 16 connections)\n\n`);
    for (const [i, v] of variants.entries()) {
      let proc: Proc;
      let ptok = 'unused';
      if (v === 'bare') proc = await startBare(fake.port, KEY);
      else {
        const [dir, how] = v.split(':');
        const env: Record<string, string> = how === 'budget' ? { KEYWARD_PROVIDERS_DIR: pricedProvidersDir(tmp) } : {};
        proc = await startKeyward(path.join(tmp, `d${i}`), fake.port, path.join(tmp, `k${i}.log`), { main: path.resolve(ROOT, dir!, 'src/main.js'), env });
        const base = `http://127.0.0.1:${proc.port}`;
        ptok = how === 'pool' ? await provisionPool(base, KEY) : await provision(base, KEY, how === 'budget' ? { budget_usd: '1000000000' } : {});
      }
      try {
        const target = { url: `http://127.0.0.1:${proc.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok, ...(sse ? { 'x-bench-sse': `${sse}:0` } : {}) }, body: BODY };
        const { requests, calls } = await count(proc, target, path.join(tmp, `strace${i}.txt`));
        const per = (n: number) => (n / requests).toFixed(2);
        const total = [...calls.values()].reduce((a, b) => a + b, 0);
        const top = [...calls].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([name, n]) => `${name} ${per(n)}`).join(', ');
        process.stdout.write(`  ${v.padEnd(28)} ${per(total).padStart(6)} per request (${requests} requests): ${top}\n`);
      } finally {
        await proc.stop();
      }
    }
  } finally {
    await fake.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}
