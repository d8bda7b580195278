/** `npm run demo` (scripts/demo.ts, on the dist/ that `npm test` builds first): offline, end to end, exit 0. */
import test from 'ava';
import { spawn } from 'node:child_process';
import { ROOT } from './support/app.js';
import { WORDS } from './support/fake-provider.js';

test('the demo streams a completion through the built gateway with the openai SDK and exits 0', async (t) => {
  t.timeout(60_000);
  const proc = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
  t.is(code, 0, `${out}\n${err}`);
  t.is(err, '');
  t.true(out.includes(`streamed: ${WORDS.join('')}`), out);
  for (const route of ['POST /v1/orgs → 201', 'POST /v1/credentials → 201', 'POST /v1/tokens → 201']) t.true(out.includes(route), route);
  t.regex(out, /the provider received the stored key: yes; the proxy token: no/);
  t.regex(out, /OPENAI_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/v1\/proxy\/v1\n/);
  t.regex(out, /OPENAI_API_KEY=ptok_[0-9A-Za-z]{38}\n/);
  t.regex(out, /gateway exited with 0/);
});
