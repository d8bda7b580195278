/**
 * The adversarial suite's shared harness. A gateway (in this process, logging
 * at debug level) in front of the fake provider, with canary keys: unique
 * random strings stored through the API. A Witness keeps every byte the
 * gateway answers (fetch, http.request and raw sockets alike), so a test ends
 * with `assertNoLeaks`: no canary, proxy token or org token (nor the base64 or
 * hex forms of a canary) in any response, any log line, or the raw bytes of
 * the store's files (keyward.db, -wal, -shm).
 */
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { createCredential, createOrg, mintToken, startApp, type Org, type StartOptions, type TestApp } from '../support/app.js';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.js';

/** Abuse controls off: these suites send many bad tokens and admin calls from one address on purpose. */
export const NO_ABUSE_LIMITS = { KEYWARD_AUTH_FAILURES: '1000000', KEYWARD_ADMIN_RATE: '1000000' };

/** A unique, random, key-shaped string nobody else could produce. */
export const canary = (label: string): string => `sk-${label}-CANARY-${randomBytes(18).toString('hex')}`;

/**
 * The forms a secret could leak in: exact bytes, hex (both cases), and base64 /
 * base64url at each of the three alignments it could take inside a longer
 * encoded string (the stable middle of each).
 */
export function leakForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = new Set<string>([secret, bytes.toString('hex'), bytes.toString('hex').toUpperCase()]);
  for (let shift = 0; shift < 3; shift++) {
    const shifted = Buffer.concat([Buffer.alloc(shift, 0x20), bytes]);
    for (const enc of ['base64', 'base64url'] as const) {
      const b64 = shifted.toString(enc).replace(/=+$/, '');
      // Keep only the characters made of the secret's bits alone: the first ceil(8·shift/6) carry
      // filler bits, the last two may carry whatever follows.
      forms.add(b64.slice(Math.ceil((8 * shift) / 6), b64.length - 2));
    }
  }
  return [...forms].filter((f) => f.length >= 16);
}

/** Everything the gateway said to us, as latin1 text (byte for byte). */
export class Witness {
  readonly seen: string[] = [];
  add(label: string, data: string | Buffer): void {
    this.seen.push(`${label}\n${typeof data === 'string' ? data : data.toString('latin1')}`);
  }
  addResponse(label: string, res: { status: number; headers: Headers | http.IncomingHttpHeaders; statusText?: string }, body: string | Buffer): void {
    const headers = res.headers instanceof Headers ? [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n') : JSON.stringify(res.headers);
    this.add(label, `${res.status} ${res.statusText ?? ''}\n${headers}\n\n${typeof body === 'string' ? body : body.toString('latin1')}`);
  }
  text(): string {
    return this.seen.join('\n');
  }
}

/** The store's files as bytes (latin1), whichever of them exist now. */
export function storeBytes(dataDir: string): string {
  let out = '';
  for (const f of ['keyward.db', 'keyward.db-wal', 'keyward.db-shm']) {
    const p = path.join(dataDir, f);
    if (existsSync(p)) out += readFileSync(p).toString('latin1');
  }
  return out;
}

export interface LeakSources {
  witness?: Witness;
  logs?: string;
  dataDir?: string;
  extra?: string[];
}

/** Fails the test if any form of any secret is in any source. Returns the number of checks made. */
export function assertNoLeaks(t: ExecutionContext, secrets: { canaries: string[]; tokens: string[] }, sources: LeakSources): void {
  const haystacks: Array<[string, string]> = [];
  if (sources.witness) haystacks.push(['responses', sources.witness.text()]);
  if (sources.logs !== undefined) haystacks.push(['logs', sources.logs]);
  if (sources.dataDir) haystacks.push(['store files', storeBytes(sources.dataDir)]);
  for (const [i, e] of (sources.extra ?? []).entries()) haystacks.push([`extra ${i}`, e]);
  t.true(haystacks.length > 0, 'something to search');
  const around = (text: string, at: number) => JSON.stringify(text.slice(Math.max(0, at - 300), at + 100));
  for (const [where, text] of haystacks) {
    for (const c of secrets.canaries) {
      for (const form of leakForms(c)) {
        const at = text.indexOf(form);
        t.is(at, -1, `a canary key (${form === c ? 'exact' : 'encoded'}) leaked into ${where}: ${at === -1 ? '' : around(text, at)}`);
      }
    }
    for (const tok of secrets.tokens) {
      const at = text.indexOf(tok);
      t.is(at, -1, `a token leaked into ${where}: ${at === -1 ? '' : around(text, at)}`);
    }
  }
}

// ---- requests --------------------------------------------------------------

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

/** fetch, recorded by the witness; never throws on a gateway answer. */
export async function call(w: Witness, url: string, init: RequestInit = {}): Promise<Reply> {
  const res = await fetch(url, init);
  const text = await res.text();
  w.addResponse(`fetch ${init.method ?? 'GET'}`, res, text);
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

export interface RawReply {
  /** Everything read before the socket closed (or the wait ended). */
  raw: string;
  status: number;
  headers: Record<string, string>;
  body: any;
  /** True if the server closed the connection. */
  closed: boolean;
}

/**
 * Raw bytes on a socket: resolves with what the server answered when it closes
 * the connection, when `until` holds, or after `waitMs`.
 */
export function rawRequest(port: number, bytes: string | Buffer | Array<string | Buffer>, options: { waitMs?: number; until?: (raw: string) => boolean; gapMs?: number; w?: Witness } = {}): Promise<RawReply> {
  const { waitMs = 3000, until, gapMs = 0, w } = options;
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let raw = '';
    let closed = false;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      w?.add('raw', raw);
      resolve({ raw, closed, ...parseRaw(raw) });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (d) => {
      raw += d.toString('latin1');
      if (until?.(raw)) finish();
    });
    socket.on('error', () => {
      closed = true;
      finish();
    });
    socket.on('close', () => {
      closed = true;
      finish();
    });
    const parts = Array.isArray(bytes) ? bytes : [bytes];
    socket.on('connect', async () => {
      for (const p of parts) {
        if (socket.destroyed) return;
        socket.write(p);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
    });
  });
}

export function parseRaw(text: string): { status: number; headers: Record<string, string>; body: any } {
  const end = text.indexOf('\r\n\r\n');
  if (!text.startsWith('HTTP/')) return { status: 0, headers: {}, body: undefined };
  const head = end === -1 ? text : text.slice(0, end);
  const lines = head.split('\r\n');
  const status = Number(lines[0]!.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  let bodyText = end === -1 ? '' : text.slice(end + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) bodyText = dechunk(bodyText);
  let body: any;
  try {
    body = JSON.parse(bodyText);
  } catch {
    body = bodyText;
  }
  return { status, headers, body };
}

function dechunk(s: string): string {
  let out = '';
  let at = 0;
  for (;;) {
    const nl = s.indexOf('\r\n', at);
    if (nl === -1) return out;
    const size = parseInt(s.slice(at, nl), 16);
    if (!Number.isFinite(size) || size === 0) return out;
    out += s.slice(nl + 2, nl + 2 + size);
    at = nl + 2 + size + 2;
  }
}

/** An http.request whose response body is read fully; `onRequest` may write the body in pieces. */
export function request(
  w: Witness,
  url: string,
  options: http.RequestOptions,
  body?: string | Buffer | ((req: http.ClientRequest) => void),
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string; body: any; error?: Error }> {
  return new Promise((resolve) => {
    const req = http.request(url, { agent: false, ...options }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      const done = (error?: Error) => {
        const buf = Buffer.concat(chunks);
        w.addResponse(`request ${options.method ?? 'GET'}`, { status: res.statusCode ?? 0, headers: res.headers, statusText: res.statusMessage ?? '' }, buf);
        let parsed: any;
        try {
          parsed = JSON.parse(buf.toString());
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: buf.toString(), body: parsed, ...(error ? { error } : {}) });
      };
      res.on('end', () => done());
      res.on('error', (err) => done(err));
      res.on('aborted', () => done(new Error('aborted')));
    });
    req.on('error', (error) => resolve({ status: 0, headers: {}, text: '', body: undefined, error }));
    if (typeof body === 'function') body(req);
    else req.end(body);
  });
}

// ---- the fixture ---------------------------------------------------------------

export type ProviderId = 'openai' | 'anthropic' | 'gemini';

export interface Adversary {
  app: TestApp;
  fake: FakeProvider;
  org: Org;
  keys: Record<ProviderId, string>;
  credentials: Record<ProviderId, string>;
  tokens: Record<ProviderId, { id: string; token: string }>;
  w: Witness;
  proxyUrl(path: string): string;
  /** Every secret this fixture made. */
  secrets(): { canaries: string[]; tokens: string[] };
  /** The whole leak check: responses, logs and store files. */
  assertNoLeaks(t: ExecutionContext, extra?: { canaries?: string[]; tokens?: string[] }): void;
}

export async function adversary(t: ExecutionContext, options: StartOptions = {}): Promise<Adversary> {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, {
    ...options,
    env: {
      ...NO_ABUSE_LIMITS,
      KEYWARD_LOG_LEVEL: 'debug',
      KEYWARD_UPSTREAM_OPENAI: fake.url,
      KEYWARD_UPSTREAM_ANTHROPIC: fake.url,
      KEYWARD_UPSTREAM_GEMINI: fake.url,
      ...options.env,
    },
  });
  const org = await createOrg(app, 'adversary');
  const keys = { openai: canary('openai'), anthropic: canary('anthropic'), gemini: canary('gemini') };
  const credentials = {
    openai: await createCredential(app, org, 'openai', keys.openai),
    anthropic: await createCredential(app, org, 'anthropic', keys.anthropic),
    gemini: await createCredential(app, org, 'gemini', keys.gemini),
  };
  const tokens = {
    openai: await mintToken(app, org, credentials.openai, '1h'),
    anthropic: await mintToken(app, org, credentials.anthropic, '1h'),
    gemini: await mintToken(app, org, credentials.gemini, '1h'),
  };
  const w = new Witness();
  const secrets = () => ({ canaries: Object.values(keys), tokens: [org.token, ...Object.values(tokens).map((x) => x.token)] });
  return {
    app, fake, org, keys, credentials, tokens, w,
    proxyUrl: (p) => `${app.url}/v1/proxy/${p}`,
    secrets,
    assertNoLeaks: (tt, extra = {}) => {
      const s = secrets();
      assertNoLeaks(tt, { canaries: [...s.canaries, ...(extra.canaries ?? [])], tokens: [...s.tokens, ...(extra.tokens ?? [])] }, {
        witness: w,
        logs: app.logText(),
        dataDir: app.dataDir,
      });
    },
  };
}


/** The contract's error shape with this status and code. */
export function isError(t: ExecutionContext, r: { status: number; body: any }, status: number, code: string, label = ''): void {
  t.is(r.status, status, `${label} ${JSON.stringify(r.body)}`.trim());
  t.is(r.body?.error?.code, code, label);
  t.is(typeof r.body?.error?.message, 'string', label);
  t.is(typeof r.body?.error?.type, 'string', label);
}
