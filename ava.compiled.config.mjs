/**
 * ava's settings for `npm test`: the same test files as ava.config.mjs, run as the JavaScript that `npm run typecheck`
 * has just emitted into dist/test/ (one tsc pass type-checks src/, providers/, plugins/, test/, bench/ and scripts/
 * and writes them to dist/), so no test process loads a TypeScript loader. The list comes from the sources
 * (test/**\/*.test.ts), so a compiled file whose source is gone never runs. `npx ava test/x.test.ts` (ava.config.mjs)
 * still runs a file straight from its source with tsx, no emit needed.
 */
import { globSync } from 'node:fs';

const sources = globSync('test/**/*.test.ts', { exclude: (name) => name === 'test/agents' || name.startsWith('test/agents/') });

export default {
  files: sources.map((file) => `dist/${file.slice(0, -'.ts'.length)}.js`),
  timeout: '60s',
  // Stack traces and ava's failure locations point at the .ts lines (tsc writes the source maps beside the .js).
  nodeArguments: ['--enable-source-maps'],
  // As in ava.config.mjs: each test file in its own process, which exits once ava is done with it.
  workerThreads: false,
  require: ['./dist/test/support/exit-when-done.js'],
};
