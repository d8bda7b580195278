/**
 * The log's lines of one event-loop turn go out in one write (one system call
 * for many proxied requests' lines, not one each), by the end of that turn; an
 * exit in the middle of a turn (process.exit, as the shutdown path does) still
 * writes every line. Each case runs in a child process writing to a file, with
 * fs.writeSync counted.
 */
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// src/log.js beside this file's tree: the compiled dist/src/log.js under `npm test`, src/log.ts through tsx when the
// file runs from source (the child gets this process's own loader flags, process.execArgv).
const LOG_JS = new URL('../../src/log.js', import.meta.url).href;

/** Runs `body` (with `log`, `writes()` and `fd` in scope) in a child; returns its stdout and the file's lines. */
function child(t: { teardown(fn: () => void): void }, body: string): { stdout: string; lines: Array<Record<string, unknown>> } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'keyward-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'out.log');
  const script = path.join(dir, 'child.mjs');
  writeFileSync(script, `
import fs from 'node:fs';
let count = 0;
const real = fs.writeSync;
fs.writeSync = (...args) => { count++; return real(...args); };
const writes = () => count;
const fd = fs.openSync(${JSON.stringify(file)}, 'w');
const { createLogger } = await import(${JSON.stringify(LOG_JS)});
const log = createLogger('info', fd);
${body}
`);
  const r = spawnSync(process.execPath, [...process.execArgv, script], { encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0) throw new Error(`child exited ${r.status}: ${r.stderr}`);
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { stdout: r.stdout, lines };
}

test('the lines of one turn are written with one write, by the end of the turn, in order', (t) => {
  const { stdout, lines } = child(t, `
const before = writes();
for (let i = 0; i < 200; i++) log.info({ i }, 'proxy request');
const during = writes() - before;
setImmediate(() => {
  const after = writes() - before;
  for (let i = 200; i < 210; i++) log.info({ i }, 'proxy request');
  setImmediate(() => process.stdout.write(JSON.stringify({ during, after, second: writes() - before - after })));
});
`);
  const counts = JSON.parse(stdout) as { during: number; after: number; second: number };
  t.is(counts.during, 0, 'nothing written while the turn runs');
  t.is(counts.after, 1, '200 lines, one write');
  t.is(counts.second, 1, 'the next turn: its own one write');
  t.deepEqual(lines.map((l) => l.i), Array.from({ length: 210 }, (_, i) => i));
  t.true(lines.every((l) => l.message === 'proxy request' && l.severity === 'INFO' && typeof l.time === 'string'));
});

test('an exit in the middle of a turn still writes every line; a turn past 64 kB is written at once', (t) => {
  const { lines } = child(t, `
for (let i = 0; i < 5; i++) log.info({ i }, 'before exit');
process.exit(0);
`);
  t.deepEqual(lines.map((l) => l.i), [0, 1, 2, 3, 4]);

  const big = child(t, `
const before = writes();
for (let i = 0; i < 1000; i++) log.info({ i, pad: 'x'.repeat(200) }, 'big');
process.stdout.write(String(writes() - before));
process.exit(0);
`);
  t.true(Number(big.stdout) >= 2, `a 250 kB turn is written in 64 kB batches as it grows (${big.stdout} writes before the turn ended)`);
  t.is(big.lines.length, 1000);
});
