/**
 * Test support: a gateway with its own TLS (a test CA) in front of one fake
 * realtime provider (realtime-fake.ts) for openai, azure and gemini, an org,
 * a credential per provider holding that provider's stored key, and helpers to
 * mint tokens and open raw `ws` sessions that collect what they receive.
 */
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import https from 'node:https';
import WebSocket from 'ws';
import { ADMIN_TOKEN, api, startApp, type Org, type StartOptions, type TestApp } from './app.js';
import { startRealtimeFake, type FakeRealtime } from './realtime-fake.js';
import { testPki, type TestPki } from './tls.js';

export type RealtimeProvider = 'openai' | 'azure' | 'gemini';

export interface RealtimeFixture {
  app: TestApp;
  fake: FakeRealtime;
  pki: TestPki;
  org: Org;
  key: string;
  credentials: Record<RealtimeProvider, string>;
  /** The gateway's origin (https with `tls`) and its proxy prefix as a WebSocket URL (wss with `tls`). */
  origin: string;
  proxy: string;
  /** One admin API call (over TLS when the gateway serves it, trusting the test CA). */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  mint(provider: RealtimeProvider, extra?: Record<string, unknown>): Promise<{ id: string; token: string }>;
  /** Opens `path` (after /v1/proxy/) over plain ws with `headers`; resolves once open (rejects with the refusal). */
  open(path: string, headers?: Record<string, string>, protocols?: string[]): Promise<Client>;
}

export interface Client {
  ws: WebSocket;
  /** Every message received, parsed (binary frames too). */
  received: Array<Record<string, any>>;
  /** Resolves when a message matching `pred` has arrived (searching from the start). */
  waitFor(pred: (m: Record<string, any>) => boolean): Promise<Record<string, any>>;
  send(message: unknown): void;
  /** Resolves with the close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
}

export function clientOf(ws: WebSocket): Client {
  const received: Array<Record<string, any>> = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (data: Buffer) => {
    try {
      received.push(JSON.parse(data.toString()));
    } catch {
      received.push({ unparsed: data.toString() });
    }
    for (const w of waiters.splice(0)) w();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => {
    resolve({ code, reason: reason.toString() });
    for (const w of waiters.splice(0)) w();
  }));
  ws.on('error', () => {});
  return {
    ws, received, closed,
    send: (m) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)),
    async waitFor(pred) {
      for (;;) {
        const hit = received.find(pred);
        if (hit) return hit;
        if (ws.readyState === WebSocket.CLOSED) throw new Error(`closed before the message came: ${JSON.stringify(received.map((m) => m.type ?? Object.keys(m)[0]))}`);
        await new Promise<void>((r) => waiters.push(r));
      }
    },
  };
}

/** Opens a ws client; resolves when open, or rejects with `{ status, body }` of the refused handshake. */
export function openClient(url: string, headers: Record<string, string> = {}, protocols: string[] = [], options: WebSocket.ClientOptions = {}): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { headers, ...options });
    const client = clientOf(ws);
    ws.once('open', () => resolve(client));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, headers: res.headers, body: body ? JSON.parse(body) : undefined })));
    });
    ws.once('error', (err) => reject(err));
  });
}

/** A JSON call over https trusting `ca` (the built-in fetch takes no CA). */
export function httpsJson(url: string, ca: Buffer, method: string, token: string | undefined, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(url, { method, ca, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(payload ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** `fakeFor`: more provider ids (a KEYWARD_PROVIDERS_DIR file's) whose upstream is the fake too. */
export async function realtimeFixture(t: ExecutionContext, options: StartOptions & { tls?: boolean; fakeFor?: readonly string[] } = {}): Promise<RealtimeFixture> {
  const pki = testPki(t);
  const key = `sk-realtime-canary-${randomBytes(12).toString('hex')}`;
  const fake = await startRealtimeFake(key);
  t.teardown(() => fake.close());
  const app = await startApp(t, {
    ...options,
    env: {
      KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_UPSTREAM_AZURE: fake.url, KEYWARD_UPSTREAM_GEMINI: fake.url,
      ...Object.fromEntries((options.fakeFor ?? []).map((id) => [`KEYWARD_UPSTREAM_${id.toUpperCase()}`, fake.url])),
      ...(options.tls ? { KEYWARD_TLS_CERT: pki.certFile, KEYWARD_TLS_KEY: pki.keyFile } : {}),
      ...options.env,
    },
  });
  const origin = `${options.tls ? 'https' : 'http'}://127.0.0.1:${app.port}`;
  const call = (method: string, path: string, token: string | undefined, body?: unknown) =>
    options.tls ? httpsJson(origin + path, pki.ca, method, token, body) : api(app, method, path, { ...(token ? { token } : {}), ...(body !== undefined ? { body } : {}) });
  const created = await call('POST', '/v1/orgs', ADMIN_TOKEN, { name: 'acme' });
  const org: Org = { id: created.body.id, token: created.body.token };
  const credential = async (body: Record<string, unknown>): Promise<string> => {
    const r = await call('POST', '/v1/credentials', org.token, body);
    if (r.status !== 201) throw new Error(`credential create failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id;
  };
  const credentials = {
    openai: await credential({ provider: 'openai', api_key: key }),
    azure: await credential({ provider: 'azure', api_key: key, resource: 'keyward-test' }),
    gemini: await credential({ provider: 'gemini', api_key: key }),
  };
  const proxy = `${options.tls ? 'wss' : 'ws'}://127.0.0.1:${app.port}/v1/proxy/`;
  return {
    app, fake, pki, org, key, credentials, origin, proxy,
    admin: (method, path, body) => call(method, path, org.token, body),
    async mint(provider, extra = {}) {
      const r = await call('POST', '/v1/tokens', org.token, { credential_id: credentials[provider], ttl: '1h', ...extra });
      if (r.status !== 201) throw new Error(`token mint failed: ${r.status} ${JSON.stringify(r.body)}`);
      return { id: r.body.id, token: r.body.token };
    },
    open: (path, headers = {}, protocols = []) => openClient(proxy + path, headers, protocols, options.tls ? { ca: pki.ca } : {}),
  };
}
