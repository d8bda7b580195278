/**
 * Bad configuration: every variable of the contract, given a wrong value,
 * stops the built server (node dist/src/main.js) at start-up with a non-zero
 * exit and exactly one stderr line naming the variable, and never echoes a
 * secret it was given.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { ROOT, tempDir } from '../support/app.js';

const KEK = randomBytes(32).toString('base64');
const SECRET_ADMIN = 'short-secret';

function start(env: Record<string, string>, dataDir: string): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [path.join(ROOT, 'dist/src/main.js')], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', KEYWARD_DATA_DIR: dataDir, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`still running with ${JSON.stringify(env)}: ${stdout.slice(0, 300)}`));
    }, 60_000); // generous: a name lookup that fails offline, on a busy machine, takes a while
    // 'close', not 'exit': only then has all of stdout and stderr been read.
    proc.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Runs `fn` over `items`, `n` at a time. */
async function pool<T, R>(items: T[], n: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  }));
  return out;
}

test('every configuration variable with a wrong value: exit ≠ 0 and one stderr line naming it, no secret echoed', async (t) => {
  const dataDir = tempDir(t);
  const aFile = path.join(tempDir(t), 'not-a-folder');
  writeFileSync(aFile, 'x');
  // A port someone else holds.
  const holder = net.createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => holder.close(() => r())));
  const busyPort = String((holder.address() as AddressInfo).port);
  const firestore = { KEYWARD_STORE: 'firestore', KEYWARD_LOCAL_KEK: KEK };
  // A plugins folder with a file that would replace the built-in auth.
  const strayAuth = tempDir(t, 'keyward-plugins-');
  writeFileSync(path.join(strayAuth, 'auth.js'), "export default { name: 'auth', onRequest() {} };");

  const cases: Array<[Record<string, string>, string]> = [
    [{ HOST: 'not a host!' }, 'HOST'],
    [{ HOST: 'no-such-host.invalid' }, 'HOST'],
    [{ HOST: '192.0.2.1' }, 'HOST'], // TEST-NET: not an address of this machine
    [{ PORT: 'abc' }, 'PORT'], [{ PORT: '70000' }, 'PORT'], [{ PORT: '-1' }, 'PORT'], [{ PORT: '80.5' }, 'PORT'],
    [{ PORT: busyPort }, 'PORT'],
    [{ KEYWARD_DATA_DIR: aFile }, 'KEYWARD_DATA_DIR'],
    [{ KEYWARD_DATA_DIR: path.join(aFile, 'below-a-file') }, 'KEYWARD_DATA_DIR'],
    [{ KEYWARD_STORE: 'mongo' }, 'KEYWARD_STORE'], [{ KEYWARD_STORE: 'SQLITE' }, 'KEYWARD_STORE'],
    [{ ...firestore, GOOGLE_CLOUD_PROJECT: 'Bad/Project' }, 'GOOGLE_CLOUD_PROJECT'],
    [{ ...firestore, FIRESTORE_EMULATOR_HOST: 'not-a-host-port' }, 'FIRESTORE_EMULATOR_HOST'],
    [{ KEYWARD_STORE: 'firestore' }, 'KEYWARD_LOCAL_KEK'],
    [{ KEYWARD_KMS: 'aws' }, 'KEYWARD_KMS'],
    [{ KEYWARD_UNPRICED: 'cheapest' }, 'KEYWARD_UNPRICED'],
    [{ KEYWARD_KMS: 'gcp' }, 'KEYWARD_KMS_KEY'],
    [{ KEYWARD_KMS_KEY: 'my-key' }, 'KEYWARD_KMS_KEY'],
    [{ KEYWARD_KMS_KEY: 'projects/p/locations/l/keyRings/r' }, 'KEYWARD_KMS_KEY'],
    [{ KEYWARD_KMS_ENDPOINT: 'no-port' }, 'KEYWARD_KMS_ENDPOINT'], [{ KEYWARD_KMS_ENDPOINT: 'http://x:1' }, 'KEYWARD_KMS_ENDPOINT'],
    [{ KEYWARD_LOCAL_KEK: 'short' }, 'KEYWARD_LOCAL_KEK'],
    [{ KEYWARD_LOCAL_KEK: randomBytes(16).toString('base64') }, 'KEYWARD_LOCAL_KEK'],
    [{ KEYWARD_LOCAL_KEK: KEK, KEYWARD_LOCAL_KEK_PREVIOUS: 'not base64 at all!' }, 'KEYWARD_LOCAL_KEK_PREVIOUS'],
    [{ KEYWARD_LOCAL_KEK_PREVIOUS: KEK }, 'KEYWARD_LOCAL_KEK_PREVIOUS'],
    [{ KEYWARD_ADMIN_TOKEN: SECRET_ADMIN }, 'KEYWARD_ADMIN_TOKEN'],
    [{ KEYWARD_UPSTREAM_OPENAI: 'ftp://example.test' }, 'KEYWARD_UPSTREAM_OPENAI'],
    [{ KEYWARD_UPSTREAM_OPENAI: 'not a url' }, 'KEYWARD_UPSTREAM_OPENAI'],
    [{ KEYWARD_UPSTREAM_ANTHROPIC: 'http://user:pw@127.0.0.1:9' }, 'KEYWARD_UPSTREAM_ANTHROPIC'],
    [{ KEYWARD_UPSTREAM_GEMINI: 'http://127.0.0.1:9/?q=1' }, 'KEYWARD_UPSTREAM_GEMINI'],
    [{ KEYWARD_UPSTREAM_OPENIA: 'http://127.0.0.1:9' }, 'KEYWARD_UPSTREAM_OPENIA'], // a typo for a provider
    [{ KEYWARD_PROVIDERS_DIR: '/nonexistent/providers' }, 'KEYWARD_PROVIDERS_DIR'], [{ KEYWARD_PROVIDERS_DIR: aFile }, 'KEYWARD_PROVIDERS_DIR'],
    [{ KEYWARD_PLUGINS_DIR: '/nonexistent/plugins' }, 'KEYWARD_PLUGINS_DIR'],
    [{ KEYWARD_PLUGINS: 'logging,no-such-plugin' }, 'KEYWARD_PLUGINS'],
    [{ KEYWARD_PLUGINS: 'logging,logging' }, 'KEYWARD_PLUGINS'], [{ KEYWARD_PLUGINS: 'auth,auth' }, 'KEYWARD_PLUGINS'], [{ KEYWARD_PLUGINS: 'logging,../../etc/x' }, 'KEYWARD_PLUGINS'],
    [{ KEYWARD_QUOTA: 'maybe' }, 'KEYWARD_QUOTA'], [{ KEYWARD_QUOTA: 'OFF' }, 'KEYWARD_QUOTA'],
    [{ KEYWARD_PLUGINS_DIR: strayAuth }, path.join(strayAuth, 'auth.js')],
    [{ KEYWARD_FREE_CREDENTIALS: '0' }, 'KEYWARD_FREE_CREDENTIALS'], [{ KEYWARD_FREE_CREDENTIALS: 'ten' }, 'KEYWARD_FREE_CREDENTIALS'],
    [{ KEYWARD_FREE_PROXY_REQUESTS: '0' }, 'KEYWARD_FREE_PROXY_REQUESTS'], [{ KEYWARD_FREE_PROXY_REQUESTS: '1e3' }, 'KEYWARD_FREE_PROXY_REQUESTS'],
    [{ KEYWARD_MAX_TTL: '0d' }, 'KEYWARD_MAX_TTL'], [{ KEYWARD_MAX_TTL: '1w' }, 'KEYWARD_MAX_TTL'], [{ KEYWARD_MAX_TTL: '01h' }, 'KEYWARD_MAX_TTL'],
    [{ KEYWARD_MAX_BODY: 'huge' }, 'KEYWARD_MAX_BODY'], [{ KEYWARD_MAX_BODY: '0' }, 'KEYWARD_MAX_BODY'], [{ KEYWARD_MAX_BODY: '-5mb' }, 'KEYWARD_MAX_BODY'],
    [{ KEYWARD_MAX_BODY: '1tb' }, 'KEYWARD_MAX_BODY'],
    [{ KEYWARD_HEADERS_TIMEOUT_MS: '0' }, 'KEYWARD_HEADERS_TIMEOUT_MS'], [{ KEYWARD_HEADERS_TIMEOUT_MS: '10s' }, 'KEYWARD_HEADERS_TIMEOUT_MS'],
    [{ KEYWARD_BODY_TIMEOUT_MS: '1.5' }, 'KEYWARD_BODY_TIMEOUT_MS'], [{ KEYWARD_BODY_TIMEOUT_MS: '-100' }, 'KEYWARD_BODY_TIMEOUT_MS'],
    [{ KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS: '0' }, 'KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS'], [{ KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS: 'x' }, 'KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS'],
    [{ KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: '0' }, 'KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS'], [{ KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: '100000000000' }, 'KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS'],
    [{ KEYWARD_DRAIN_S: '1.5' }, 'KEYWARD_DRAIN_S'], [{ KEYWARD_DRAIN_S: '-1' }, 'KEYWARD_DRAIN_S'], [{ KEYWARD_DRAIN_S: '99999' }, 'KEYWARD_DRAIN_S'],
    [{ KEYWARD_LOG_LEVEL: 'verbose' }, 'KEYWARD_LOG_LEVEL'], [{ KEYWARD_LOG_LEVEL: 'INFO' }, 'KEYWARD_LOG_LEVEL'],
    [{ KEYWARD_ADMIN_RATE: '0' }, 'KEYWARD_ADMIN_RATE'], [{ KEYWARD_ADMIN_RATE: 'many' }, 'KEYWARD_ADMIN_RATE'],
    [{ KEYWARD_AUTH_FAILURES: '0' }, 'KEYWARD_AUTH_FAILURES'], [{ KEYWARD_AUTH_FAILURES: 'x' }, 'KEYWARD_AUTH_FAILURES'],
    [{ KEYWARD_AUTH_COOLDOWN_S: '0' }, 'KEYWARD_AUTH_COOLDOWN_S'], [{ KEYWARD_AUTH_COOLDOWN_S: '1d' }, 'KEYWARD_AUTH_COOLDOWN_S'],
  ];
  const results = await pool(cases, 6, ([env]) => start(env, dataDir));
  cases.forEach(([env, variable], i) => {
    const { code, signal, stdout, stderr } = results[i]!;
    const label = JSON.stringify(env);
    t.is(signal, null, `${label}: exited by itself`);
    t.true(code !== null && code !== 0, `${label}: exit code ${code}`);
    const lines = stderr.split('\n').filter(Boolean);
    t.is(lines.length, 1, `${label}: exit ${code}, stderr ${JSON.stringify(stderr)}, stdout ${JSON.stringify(stdout.slice(0, 300))}`);
    t.regex(lines[0] ?? '', /^keyward: /, label);
    t.true((lines[0] ?? '').includes(variable), `${label}: ${stderr}`);
    t.false(stdout.includes('"listening"'), `${label}: it never listened`);
    for (const [name, value] of Object.entries(env)) {
      if (/KEK|TOKEN/.test(name)) {
        t.false(stderr.includes(value) || stdout.includes(value), `${label}: the ${name} value was echoed`);
      }
    }
  });
  // Every variable of the contract was covered.
  const covered = new Set(cases.flatMap(([env, v]) => [...Object.keys(env), v]));
  for (const v of ['HOST', 'PORT', 'KEYWARD_DATA_DIR', 'KEYWARD_STORE', 'GOOGLE_CLOUD_PROJECT', 'FIRESTORE_EMULATOR_HOST', 'KEYWARD_KMS', 'KEYWARD_KMS_KEY',
    'KEYWARD_KMS_ENDPOINT', 'KEYWARD_LOCAL_KEK', 'KEYWARD_LOCAL_KEK_PREVIOUS', 'KEYWARD_ADMIN_TOKEN', 'KEYWARD_UPSTREAM_OPENAI', 'KEYWARD_PROVIDERS_DIR',
    'KEYWARD_PLUGINS_DIR', 'KEYWARD_PLUGINS', 'KEYWARD_FREE_CREDENTIALS', 'KEYWARD_FREE_PROXY_REQUESTS', 'KEYWARD_MAX_TTL', 'KEYWARD_MAX_BODY',
    'KEYWARD_HEADERS_TIMEOUT_MS', 'KEYWARD_BODY_TIMEOUT_MS', 'KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS', 'KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS', 'KEYWARD_DRAIN_S',
    'KEYWARD_LOG_LEVEL', 'KEYWARD_ADMIN_RATE', 'KEYWARD_AUTH_FAILURES', 'KEYWARD_AUTH_COOLDOWN_S', 'KEYWARD_QUOTA']) t.true(covered.has(v), `${v} has a bad-value case`);
});

test('the good values next to the bad ones start: a control, so the refusals above are about the values', async (t) => {
  const dataDir = tempDir(t);
  const proc = spawn(process.execPath, [path.join(ROOT, 'dist/src/main.js')], {
    env: {
      PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK, KEYWARD_LOCAL_KEK_PREVIOUS: randomBytes(32).toString('base64'),
      KEYWARD_ADMIN_TOKEN: 'a-long-enough-admin-token', KEYWARD_UPSTREAM_OPENAI: 'http://127.0.0.1:9', KEYWARD_PROVIDERS_DIR: path.join(ROOT, 'dist/providers'),
      KEYWARD_PLUGINS_DIR: path.join(ROOT, 'dist/plugins'), KEYWARD_PLUGINS: 'logging', KEYWARD_QUOTA: 'on', KEYWARD_FREE_CREDENTIALS: '1', KEYWARD_FREE_PROXY_REQUESTS: '1',
      KEYWARD_MAX_TTL: '1h', KEYWARD_MAX_BODY: '1kb', KEYWARD_HEADERS_TIMEOUT_MS: '1000', KEYWARD_BODY_TIMEOUT_MS: '1000', KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS: '1',
      KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: '1', KEYWARD_DRAIN_S: '0', KEYWARD_LOG_LEVEL: 'info', KEYWARD_ADMIN_RATE: '1', KEYWARD_AUTH_FAILURES: '1', KEYWARD_AUTH_COOLDOWN_S: '1',
      GOOGLE_CLOUD_PROJECT: 'my-project-123', FIRESTORE_EMULATOR_HOST: '127.0.0.1:8085', KEYWARD_KMS_ENDPOINT: '127.0.0.1:9',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => proc.once('close', (code) => r(code)));
  const listening = new Promise<string>((r) => proc.stdout.on('data', (d) => {
    stdout += d;
    if (stdout.includes('"listening"')) r('listening');
  }));
  const outcome = await Promise.race([exited.then((code) => `exited ${code}`), listening, new Promise<string>((r) => setTimeout(() => r('timeout'), 60_000))]);
  t.is(outcome, 'listening', stderr);
  proc.kill('SIGTERM');
  t.is(await exited, 0);
  t.is(stderr, '');
});
