/**
 * ava's settings for running test files from source (`npx ava test/x.test.ts`: tsx compiles each file as it loads;
 * `npm test` runs the same files compiled instead, ava.compiled.config.mjs). The coding-agent tests (test/agents/) need the agents installed from npm first, so they run only
 * from `npm run test:agents` (scripts/test-agents.mjs, which sets KEYWARD_AGENTS_DIR), never in `npm test`.
 */
const agents = process.env.KEYWARD_AGENTS_DIR !== undefined;

export default {
  extensions: ['ts'],
  nodeArguments: ['--import=tsx'],
  files: agents ? ['test/agents/**/*.test.ts'] : ['test/**/*.test.ts', '!test/agents/**'],
  timeout: agents ? '5m' : '60s',
  // Each test file in its own process, which exits once ava is done with it (test/support/exit-when-done.ts): a
  // worker thread stuck in native code after its tests cannot be terminated, a process can.
  workerThreads: false,
  require: ['./test/support/exit-when-done.ts'],
};
