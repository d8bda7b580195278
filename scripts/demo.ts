/**
 * `npm run demo`: Keyward end to end, offline, in a few seconds.
 *
 * Starts a local fake OpenAI-compatible provider, starts the built gateway
 * (`node dist/src/main.js`, exactly what `npm start` runs) on a free port with
 * a throwaway data folder, then over HTTP: creates an organisation, stores an
 * OpenAI key, mints a 15-minute proxy token, and streams a chat completion
 * through the gateway with the official `openai` SDK (apiKey = ptok_…).
 * Prints the env vars an agent would set, then stops everything with SIGTERM
 * and exits 0. `npm run demo -- --keep` leaves the gateway running until Ctrl-C.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startFakeProvider, type FakeProvider } from '../test/support/fake-provider.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MAIN = path.join(ROOT, 'dist', 'src', 'main.js');
const keep = process.argv.includes('--keep');

const say = (line = '') => process.stdout.write(`${line}\n`);
let stepNo = 0;
const step = (what: string) => say(`\n[${++stepNo}] ${what}`);

interface Gateway {
  url: string;
  proc: ChildProcess;
  logs: string[];
  exited: Promise<number | null>;
}

async function startGateway(env: Record<string, string>): Promise<Gateway> {
  const proc = spawn(process.execPath, [MAIN], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  let buffered = '';
  proc.stderr!.on('data', (d: Buffer) => logs.push(d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the gateway did not start within 20 s')), 20_000);
    proc.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString();
      let nl;
      while ((nl = buffered.indexOf('\n')) !== -1) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        logs.push(line);
        try {
          const o = JSON.parse(line) as { message?: string; port?: number };
          if (o.message === 'listening' && typeof o.port === 'number') {
            clearTimeout(timer);
            resolve(o.port);
          }
        } catch { /* not JSON */ }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited with ${code} before listening`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, proc, logs, exited };
}

async function call<T>(base: string, method: string, route: string, token: string, body?: unknown): Promise<T> {
  const res = await fetch(base + route, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route} → ${res.status} ${text}`);
  say(`    ${method} ${route} → ${res.status}`);
  return JSON.parse(text) as T;
}

const short = (secret: string) => `${secret.slice(0, 9)}…`;

async function main(): Promise<number> {
  if (!existsSync(MAIN)) {
    say('dist/ is missing: building with `npm run build` …');
    const built = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit', shell: process.platform === 'win32' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }

  say('Keyward demo: a vault and streaming proxy for LLM provider keys (offline, nothing leaves this machine).');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'keyward-demo-'));
  const adminToken = `demo-admin-${randomBytes(16).toString('hex')}`;
  const providerKey = `sk-demo-${randomBytes(16).toString('hex')}`;
  let fake: FakeProvider | undefined;
  let gateway: Gateway | undefined;
  try {
    step('Starting a fake OpenAI-compatible provider (it streams "Hello from the fake provider!")');
    fake = await startFakeProvider();
    say(`    ${fake.url}`);

    step('Starting the gateway: node dist/src/main.js (SQLite + a local key in a temp folder)');
    gateway = await startGateway({
      HOST: '127.0.0.1',
      PORT: '0',
      KEYWARD_DATA_DIR: dataDir,
      KEYWARD_ADMIN_TOKEN: adminToken,
      KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'),
      KEYWARD_UPSTREAM_OPENAI: fake.url,
      KEYWARD_UPSTREAM_ANTHROPIC: fake.url,
      KEYWARD_LOG_LEVEL: 'info',
    });
    const gw = gateway.url;
    say(`    listening on ${gw}  (API description: ${gw}/v1/openapi.json)`);

    step('Creating an organisation (POST /v1/orgs with the operator\'s KEYWARD_ADMIN_TOKEN)');
    const org = await call<{ id: string; token: string }>(gw, 'POST', '/v1/orgs', adminToken, { name: 'demo' });
    say(`    org ${org.id}, org token ${short(org.token)} (shown once)`);

    step('Storing an OpenAI key in the vault (POST /v1/credentials)');
    const cred = await call<{ id: string; key_hint: string }>(gw, 'POST', '/v1/credentials', org.token, { provider: 'openai', api_key: providerKey });
    say(`    credential ${cred.id}, key_hint ${cred.key_hint} (the key is encrypted at rest and never returned)`);

    step('Minting a 15-minute proxy token for an agent (POST /v1/tokens)');
    const tok = await call<{ id: string; token: string; expires_at: string }>(gw, 'POST', '/v1/tokens', org.token, { credential_id: cred.id, ttl: '15m' });
    say(`    token ${tok.id}: ${short(tok.token)}, expires ${tok.expires_at}`);

    step('Streaming a chat completion through the gateway with the official openai SDK');
    const baseURL = `${gw}/v1/proxy/v1`;
    say(`    new OpenAI({ apiKey: '${short(tok.token)}', baseURL: '${baseURL}' })`);
    const client = new OpenAI({ apiKey: tok.token, baseURL, maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions
      .create(
        { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Say hello' }] },
        // Steers the fake provider: six words, 120 ms apart, so the streaming is visible.
        { headers: { 'x-fake-events': '6', 'x-fake-delay-ms': '120' } },
      )
      .withResponse();
    process.stdout.write('    streamed: ');
    let text = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta?.content ?? '';
      text += delta;
      process.stdout.write(delta);
    }
    say();
    say(`    x-keyward-request-id: ${response.headers.get('x-keyward-request-id')}, x-keyward-quota-remaining: ${response.headers.get('x-keyward-quota-remaining')}`);
    const upstream = fake.received.at(-1);
    const sawStoredKey = upstream?.headers.authorization === `Bearer ${providerKey}`;
    const sawToken = JSON.stringify(upstream?.rawHeaders ?? []).includes(tok.token);
    say(`    the provider received the stored key: ${sawStoredKey ? 'yes' : 'NO'}; the proxy token: ${sawToken ? 'YES' : 'no'}`);
    if (!text || !sawStoredKey || sawToken) throw new Error('the proxied request did not go as expected');

    step(`Point an agent at Keyward: these env vars and no code change${keep ? '' : ' (this gateway stops next; `npm run demo -- --keep` leaves it up)'}`);
    say(`    OPENAI_BASE_URL=${baseURL}`);
    say(`    OPENAI_API_KEY=${tok.token}`);
    say(`    # Anthropic SDKs: ANTHROPIC_BASE_URL=${gw}/v1/proxy  ANTHROPIC_API_KEY=<a ptok_ for an anthropic credential>`);

    if (keep) {
      say(`\nThe gateway keeps running at ${gw} (org token: ${org.token}). Ctrl-C to stop.`);
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }

    step('Shutting down (SIGTERM: drain, hand quota back, exit 0)');
    gateway.proc.kill('SIGTERM');
    const code = await gateway.exited;
    gateway = undefined;
    say(`    gateway exited with ${code}`);
    if (code !== 0) throw new Error(`the gateway exited with ${code}`);
    say('\nDone. Next: `npm start` with your own KEYWARD_ADMIN_TOKEN, store a real provider key, and mint tokens for your agents.');
    return 0;
  } catch (err) {
    process.stderr.write(`\ndemo failed: ${(err as Error).message}\n`);
    if (gateway) process.stderr.write(`gateway output:\n${gateway.logs.join('\n')}\n`);
    return 1;
  } finally {
    if (gateway && gateway.proc.exitCode === null && gateway.proc.signalCode === null) {
      gateway.proc.kill('SIGKILL');
      await gateway.exited;
    }
    await fake?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`demo failed: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
