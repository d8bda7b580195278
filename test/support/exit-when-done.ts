/**
 * Loaded by ava into every test file's process (ava.config.mjs `require`): once ava has finished with a file (every
 * test and hook done, results sent), the process exits, whatever handle a client library left behind. Without it a
 * file whose tests all passed could keep its worker alive after the run (seen: a worker at 100% CPU after the last
 * file, so `npm test` never returned and CI timed out). The tests' own teardowns still run first: this fires only
 * after them. KEYWARD_TEST_HANDLES=1 prints what was still open, to find the file that leaves something behind.
 * KEYWARD_TEST_TIMES=<file> appends one line per test file to that file: its path, the process's wall time from
 * start to done and its own CPU time (user + system, not its child processes'), in seconds, tab-separated: where
 * a run's time goes.
 */
import test, { registerCompletionHandler } from 'ava';
import { appendFileSync } from 'node:fs';
import process from 'node:process';

registerCompletionHandler(() => {
  if (process.env.KEYWARD_TEST_HANDLES === '1') {
    const open = process.getActiveResourcesInfo().filter((kind) => kind !== 'PipeWrap' && kind !== 'TTYWrap');
    if (open.length > 0) process.stderr.write(`exit-when-done: ${test.meta.file} left ${open.join(', ')}\n`);
  }
  const times = process.env.KEYWARD_TEST_TIMES;
  if (times) {
    const cpu = process.cpuUsage();
    appendFileSync(times, `${test.meta.file}\t${process.uptime().toFixed(2)}\t${((cpu.user + cpu.system) / 1e6).toFixed(2)}\n`);
  }
  process.exit();
});
