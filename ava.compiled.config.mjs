/**
 * ava's settings for `npm test`: the same test files as ava.config.mjs, run as the JavaScript that `npm run typecheck`
 * has just emitted into dist/test/ (one tsc pass type-checks src/, providers/, plugins/, test/, bench/ and scripts/
 * and writes them to dist/), so no test process loads a TypeScript loader. The list comes from the sources
 * (test/**\/*.test.ts), so a compiled file whose source is gone never runs. `npx ava test/x.test.ts` (ava.config.mjs)
 * still runs a file straight from its source with tsx, no emit needed.
 */
import { globSync, readFileSync } from 'node:fs';
import path from 'node:path';

const sources = globSync('test/**/*.test.ts', { exclude: (name) => name === 'test/agents' || name.startsWith('test/agents/') });
const compiled = (source) => `dist/${source.slice(0, -'.ts'.length)}.js`;

// Files that start other processes (built servers, the CLI, a browser) are the longest, mostly waiting on those
// processes: they go first, so that the run does not end on one of them while the other cores have nothing left.
const OTHER_PROCESSES = /spawnServer|startHoldingCluster|support\/cli\.js|node:child_process|support\/browser\.js|console-page\.js|spawn: true/;
const long = new Set(sources.filter((source) => OTHER_PROCESSES.test(readFileSync(source, 'utf8'))).map((source) => path.resolve(compiled(source))));

export default {
  files: sources.map(compiled),
  sortTestFiles: (a, b) => Number(long.has(b)) - Number(long.has(a)) || a.localeCompare(b),
  timeout: '60s',
  // Three files at a time on two cores: most of a file's time is spent waiting on the processes it starts (servers,
  // the CLI, a browser) or on their sockets, so a third file fills the cores those waits leave idle.
  concurrency: 3,
  // Stack traces and ava's failure locations point at the .ts lines (tsc writes the source maps beside the .js).
  nodeArguments: ['--enable-source-maps'],
  // As in ava.config.mjs: each test file in its own process, which exits once ava is done with it.
  workerThreads: false,
  require: ['./dist/test/support/exit-when-done.js'],
};
