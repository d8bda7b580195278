/**
 * The built server as its own process (node dist/src/main.js; `npm test`
 * builds dist/ first): the listening line, durability across kill -9, SIGTERM,
 * and start-up refusal of bad configuration.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { api, createCredential, createOrg, mintToken, ROOT, spawnServer, tempDir } from '../support/app.js';

const KEK = randomBytes(32).toString('base64');
const START_TIMEOUT_MS = 60_000;

test('the first stdout line is the listening JSON; SIGTERM exits 0', async (t) => {
  const dataDir = tempDir(t);
  const server = await spawnServer(t, { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK }, START_TIMEOUT_MS);
  const first = JSON.parse(server.lines[0]!);
  t.is(first.severity, 'INFO');
  t.is(first.message, 'listening');
  t.is(first.port, server.port);
  t.is(typeof first.address, 'string');
  t.true(server.port > 0);
  t.regex(first.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.is((await api(server.url, 'GET', '/healthz')).status, 200);
  t.is((await api(server.url, 'GET', '/readyz')).status, 200);
  // Every stdout line is one JSON object in Cloud Logging's shape.
  const org = await createOrg(server.url);
  await createCredential(server.url, { id: org.id, token: org.token }, 'openai', 'sk-test-process-0000001');
  t.is(await server.kill('SIGTERM'), 0);
  for (const line of server.lines.filter(Boolean)) {
    const o = JSON.parse(line);
    t.true(['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'].includes(o.severity), line);
    t.is(typeof o.message, 'string');
    t.is(typeof o.time, 'string');
  }
  const out = server.lines.join('\n');
  t.false(out.includes(org.token));
  t.false(out.includes('sk-test-process-0000001'));
});

test('without KEYWARD_LOCAL_KEK the embedded default makes a key file, warns, and still listens', async (t) => {
  const dataDir = tempDir(t);
  const server = await spawnServer(t, { KEYWARD_DATA_DIR: dataDir }, START_TIMEOUT_MS);
  const parsed = () => server.lines.filter(Boolean).map((l) => JSON.parse(l));
  t.is(parsed()[0].message, 'listening', 'the listening line comes first; start-up notices follow it');
  t.is(parsed()[0].port, server.port);
  // The key-file warning is written right after the listening line: wait for it to be read.
  for (let i = 0; i < 100 && !parsed().some((o) => o.severity === 'WARNING'); i++) await new Promise((r) => setTimeout(r, 20));
  const warning = parsed().find((o) => o.severity === 'WARNING');
  t.truthy(warning);
  t.regex(warning.message, /local key-encryption key/);
  t.is(await server.kill('SIGTERM'), 0);
});

test('acknowledged writes survive kill -9', async (t) => {
  const dataDir = tempDir(t);
  const env = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK };
  const first = await spawnServer(t, env, START_TIMEOUT_MS);
  const org = await createOrg(first.url);
  const creds: string[] = [];
  for (let i = 0; i < 5; i++) creds.push(await createCredential(first.url, org, 'openai', `sk-test-kill9-${i}0000000`));
  const tok = await mintToken(first.url, org, creds[0]!, '1h');
  const revoked = await mintToken(first.url, org, creds[1]!, '1h');
  t.is((await api(first.url, 'DELETE', `/v1/tokens/${revoked.id}`, { token: org.token })).status, 200);
  t.is((await api(first.url, 'DELETE', `/v1/credentials/${creds[4]}`, { token: org.token })).status, 200);
  first.proc.kill('SIGKILL');
  await first.exited;
  t.is(first.proc.signalCode, 'SIGKILL');

  const second = await spawnServer(t, env, START_TIMEOUT_MS);
  const list = await api(second.url, 'GET', '/v1/credentials', { token: org.token });
  t.is(list.status, 200, 'the org and its token survived');
  t.deepEqual(list.body.data.map((c: any) => c.id).sort(), creds.slice(0, 4).sort());
  t.is((await api(second.url, 'GET', `/v1/tokens/${tok.id}`, { token: org.token })).status, 200);
  t.is((await api(second.url, 'GET', `/v1/tokens/${revoked.id}`, { token: org.token })).status, 404, 'the revocation survived too');
  t.is((await api(second.url, 'GET', '/v1/usage', { token: org.token })).body.credentials.used, 4);
  t.is(await second.kill('SIGTERM'), 0);
});

/** Runs the server with `env` and expects it to refuse to start. */
function refuse(env: Record<string, string>, dataDir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
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
      reject(new Error(`still running with ${JSON.stringify(env)}: ${stdout}`));
    }, 60_000);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('a bad configuration value exits non-zero with one stderr line naming the variable', async (t) => {
  const dataDir = tempDir(t);
  const secretish = 'c2hvcnQ=';
  const cases: Array<[Record<string, string>, string]> = [
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ KEYWARD_MAX_TTL: '0d' }, 'KEYWARD_MAX_TTL'],
    [{ KEYWARD_MAX_TTL: '15' }, 'KEYWARD_MAX_TTL'],
    [{ KEYWARD_LOCAL_KEK: 'short' }, 'KEYWARD_LOCAL_KEK'],
    [{ KEYWARD_LOCAL_KEK: secretish }, 'KEYWARD_LOCAL_KEK'],
    [{ KEYWARD_LOCAL_KEK_PREVIOUS: KEK }, 'KEYWARD_LOCAL_KEK_PREVIOUS'],
    [{ KEYWARD_STORE: 'mongo' }, 'KEYWARD_STORE'],
    [{ KEYWARD_KMS: 'aws' }, 'KEYWARD_KMS'],
    [{ KEYWARD_KMS: 'gcp' }, 'KEYWARD_KMS_KEY'],
    [{ KEYWARD_FREE_CREDENTIALS: '-1' }, 'KEYWARD_FREE_CREDENTIALS'],
    [{ KEYWARD_FREE_PROXY_REQUESTS: 'lots' }, 'KEYWARD_FREE_PROXY_REQUESTS'],
    [{ KEYWARD_MAX_BODY: 'huge' }, 'KEYWARD_MAX_BODY'],
    [{ KEYWARD_LOG_LEVEL: 'verbose' }, 'KEYWARD_LOG_LEVEL'],
    [{ KEYWARD_ADMIN_TOKEN: 'short' }, 'KEYWARD_ADMIN_TOKEN'],
    [{ KEYWARD_UPSTREAM_OPENAI: 'ftp://example.com' }, 'KEYWARD_UPSTREAM_OPENAI'],
    [{ KEYWARD_DRAIN_S: '1.5' }, 'KEYWARD_DRAIN_S'],
  ];
  // At most four Node processes at a time: a loaded CI machine must not turn this into a timeout.
  const results: Array<Awaited<ReturnType<typeof refuse>>> = [];
  for (let i = 0; i < cases.length; i += 4) results.push(...(await Promise.all(cases.slice(i, i + 4).map(([env]) => refuse(env, dataDir)))));
  cases.forEach(([env, variable], i) => {
    const { code, stdout, stderr } = results[i]!;
    const label = JSON.stringify(env);
    t.not(code, 0, label);
    t.not(code, null, label);
    const lines = stderr.split('\n').filter(Boolean);
    t.is(lines.length, 1, `${label}: ${stderr}`);
    t.true(lines[0]!.includes(variable), `${label}: ${stderr}`);
    t.is(stdout, '', label);
    // A key is never echoed back.
    if (variable.startsWith('KEYWARD_LOCAL_KEK')) {
      t.false(stderr.includes(env[variable]!), label);
      t.false(stderr.includes(KEK), label);
    }
    if (variable === 'KEYWARD_ADMIN_TOKEN') t.false(stderr.includes('short'), label);
  });
});
