/**
 * Loaded by ava into every test file's process (ava.config.mjs `require`): once ava has finished with a file (every
 * test and hook done, results sent), the process exits, whatever handle a client library left behind. Without it a
 * file whose tests all passed could keep its worker alive after the run (seen: a worker at 100% CPU after the last
 * file, so `npm test` never returned and CI timed out). The tests' own teardowns still run first: this fires only
 * after them. KEYWARD_TEST_HANDLES=1 prints what was still open, to find the file that leaves something behind.
 * KEYWARD_TEST_TIMES=<file> appends one line per test file to that file: its path, the process's wall time from
 * start to done, its own CPU time (user + system) and the CPU time of the child processes it has waited for (from
 * /proc/self/stat, where there is one), in seconds, tab-separated: where a run's time goes.
 */
import test, { registerCompletionHandler } from 'ava';
import { appendFileSync, readFileSync } from 'node:fs';
import process from 'node:process';

registerCompletionHandler(() => {
  if (process.env.KEYWARD_TEST_HANDLES === '1') {
    const open = process.getActiveResourcesInfo().filter((kind) => kind !== 'PipeWrap' && kind !== 'TTYWrap');
    if (open.length > 0) process.stderr.write(`exit-when-done: ${test.meta.file} left ${open.join(', ')}\n`);
  }
  const times = process.env.KEYWARD_TEST_TIMES;
  if (times) {
    const cpu = process.cpuUsage();
    appendFileSync(times, `${test.meta.file}\t${process.uptime().toFixed(2)}\t${((cpu.user + cpu.system) / 1e6).toFixed(2)}\t${childrenCpuSeconds()}\n`);
  }
  process.exit();
});

/** cutime + cstime of /proc/self/stat (fields 16 and 17, in clock ticks of 1/100 s on Linux), or '' elsewhere. */
function childrenCpuSeconds(): string {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[13]) + Number(fields[14])) / 100).toFixed(2);
  } catch {
    return '';
  }
}
