/**
 * The Dockerfile's recipe, replayed without Docker by scripts/docker-replay.sh:
 * build stage (npm ci + build from tracked files), runtime stage (production
 * dependencies only + dist/), then the server on Node 24: /readyz 200, an
 * admin round trip, the Cloud Run adapters loading, SIGTERM → exit 0.
 *
 * About a minute with a warm npm cache, and it needs the npm registry, so it
 * runs with `npm run test:docker` (KEYWARD_DOCKER_REPLAY=1), not in `npm test`,
 * where its installs would compete with timing-sensitive tests.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../support/app.js';

const enabled = process.env.KEYWARD_DOCKER_REPLAY === '1';

(enabled ? test : test.skip)('the Dockerfile replayed: build, production-only runtime, ready, SIGTERM exits 0', async (t) => {
  t.timeout(5 * 60_000);
  const started = Date.now();
  const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn('bash', [path.join(ROOT, 'scripts/docker-replay.sh')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
      t.log(String(d).trimEnd());
    });
    child.on('exit', (c) => resolve({ code: c, stderr }));
  });
  t.is(code, 0, stderr);
  t.regex(stderr, /listening on http:\/\/127\.0\.0\.1:\d+/);
  t.regex(stderr, /admin API round trip ok/);
  t.regex(stderr, /SIGTERM → exit 0/);
  t.log(`replay took ${Math.round((Date.now() - started) / 1000)} s`);
});
