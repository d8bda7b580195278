/**
 * The built server as its own process (node dist/src/main.js; `npm test`
 * builds dist/ first): the listening line, durability across kill -9, SIGTERM,
 * and start-up refusal of bad configuration; a second signal during the drain.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { api, createCredential, createOrg, mintToken, ROOT, spawnServer, tempDir, type SpawnedServer } from '../support/app.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { eventually } from '../support/wait.js';

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
  await eventually(() => parsed().some((o) => o.severity === 'WARNING'), 'the warning read').catch(() => undefined);
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

/** Resolves with the first stdout line `matches` accepts (already read or still to come); rejects if the server exits first. */
function lineOf(server: SpawnedServer, matches: (o: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  const find = () => server.lines.map((l) => { try { return JSON.parse(l) as Record<string, unknown>; } catch { return {}; } }).find(matches);
  return new Promise((resolve, reject) => {
    const check = () => {
      const found = find();
      if (!found) return;
      server.proc.stdout!.off('data', check);
      resolve(found);
    };
    // spawnServer's own listener splits the chunk into `lines` first (it was attached first).
    server.proc.stdout!.on('data', check);
    void server.exited.then((code) => reject(new Error(`the server exited (${code}) before the line came`)));
    check();
  });
}

test('a second SIGTERM (and a SIGINT) during the drain do not cut it short: the stream ends whole, spans and usage are flushed, exit 0', async (t) => {
  const dataDir = tempDir(t);
  const otlp = await startOtlpReceiver();
  t.teardown(() => otlp.close());
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const frame = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
  const chunk = (content: string) => frame({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content }, finish_reason: null }] });
  // The stream's first half goes out at once; the rest (with its usage) only when the test says, after both signals.
  fake.handler = async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk('first half'));
    await released;
    res.write(chunk(', second half'));
    res.write(frame({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 } }));
    res.end('data: [DONE]\n\n');
  };
  const env = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK, KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_DRAIN_S: '120', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url };
  const server = await spawnServer(t, env, START_TIMEOUT_MS);
  const org = await createOrg(server.url);
  const cred = await createCredential(server.url, org, 'openai', 'sk-test-drain-00000000001');
  const tok = await mintToken(server.url, org, cred, '1h');

  const res = await fetch(`${server.url}/v1/proxy/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tok.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.is(res.status, 200);
  const requestId = res.headers.get('x-keyward-request-id');
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let received = decoder.decode((await reader.read()).value, { stream: true });
  t.true(received.includes('first half'), 'the stream is under way');

  server.proc.kill('SIGTERM');
  await lineOf(server, (o) => o.message === 'shutting down');
  server.proc.kill('SIGTERM');
  server.proc.kill('SIGINT');
  // Each extra signal is logged and ignored (the default action would have ended the process before logging anything).
  await lineOf(server, (o) => o.message === 'already draining: this signal is ignored (SIGKILL skips the drain)' && o.signal === 'SIGINT');
  t.is(server.lines.filter((l) => l.includes('already draining')).length, 2);
  t.is(server.proc.exitCode, null, 'still draining');
  t.is((await fetch(`${server.url}/healthz`).catch(() => undefined))?.status ?? 0, 0, 'no new connection is taken while draining');

  release();
  for (let r = await reader.read(); !r.done; r = await reader.read()) received += decoder.decode(r.value, { stream: true });
  t.true(received.includes(', second half') && received.trim().endsWith('data: [DONE]'), 'the stream ended whole');
  t.is(await server.exited, 0);

  // Spans: the proxied request's span was exported before exit, with the usage the stream reported.
  const span = otlp.spans().find((s) => s.attributes['keyward.request_id'] === requestId);
  t.truthy(span, 'the drained request\'s span was exported');
  t.like(span?.attributes, { 'gen_ai.usage.input_tokens': 7, 'gen_ai.usage.output_tokens': 5, 'http.response.status_code': 200 });
  // Usage: written to the store before exit (the next process reads it there).
  const again = await spawnServer(t, env, START_TIMEOUT_MS);
  const after = await api(again.url, 'GET', `/v1/tokens/${tok.id}`, { token: org.token });
  t.like(after.body.usage, { requests: 1, input_tokens: 7, output_tokens: 5 });
  t.is(await again.kill('SIGTERM'), 0);
});
