/**
 * `keyward login --gateway <url> --org <org_id>` and `keyward token`: a person's own access, through a
 * gateway's HTTP API rather than the store. `login` runs the organisation's device sign-in (RFC 8628,
 * brokered by the gateway through the organisation's confidential client): it prints where to go and the
 * code on stderr, polls until the person has signed in. Where the provider offers no device grant it runs
 * a loopback redirect with PKCE (RFC 8252, RFC 7636): it listens on 127.0.0.1, prints the sign-in link, and
 * redeems the one-time code the browser brings back with its verifier. Either way it keeps the session and its refresh value in the
 * user's config directory (KEYWARD_CONFIG_DIR, else $XDG_CONFIG_HOME/keyward, else ~/.config/keyward),
 * folder 0700 and file 0600. `token` prints a personal proxy token alone on stdout (what Claude Code's
 * `apiKeyHelper` runs): the cached one while it has more than 5 minutes left, else a new one (1 h unless
 * --ttl), renewing the session with its refresh value when it has ended.
 */
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import path from 'node:path';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from '../private-files.js';
import { one, required, type Command, type Context } from './command-kit.js';
import { UsageError } from './io.js';

/** A token with less than this left is not printed again: a new one is minted. */
const CACHE_MARGIN_MS = 5 * 60_000;
const POLL_CAP_MS = 15 * 60_000;

interface StoredSession {
  gateway: string;
  org: string;
  member: { id: string; email: string | null };
  session: string;
  expires_at: string;
  refresh_token: string;
  refresh_expires_at: string;
}

interface CachedToken {
  key: string;
  token: string;
  expires_at: string;
}

/** Where `login` keeps the session: the user's config directory. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KEYWARD_CONFIG_DIR) return env.KEYWARD_CONFIG_DIR;
  const base = env.XDG_CONFIG_HOME || path.join(homedir(), '.config');
  return path.join(base, 'keyward');
}

function writePrivate(file: string, value: unknown): void {
  ensurePrivateDir(path.dirname(file));
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n', { mode: PRIVATE_FILE_MODE });
  renameSync(tmp, file);
}

function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

function gatewayUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError('--gateway must be the gateway\'s URL, such as https://keyward.example.com');
  }
  const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) throw new UsageError('--gateway must be https (http only on a loopback address)');
  return url.origin;
}

async function call(url: string, init: { method: string; body?: unknown; bearer?: string }): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method: init.method,
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.bearer ? { authorization: `Bearer ${init.bearer}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, body };
}

const failure = (r: { status: number; body: any }): Error => new Error(r.body?.error?.message ?? `the gateway answered ${r.status}`);

function sessionFile(): string {
  return path.join(configDir(), 'session.json');
}

function save(gateway: string, org: string, body: any): StoredSession {
  const stored: StoredSession = {
    gateway, org, member: { id: body.member.id, email: body.member.email }, session: body.session, expires_at: body.expires_at,
    refresh_token: body.refresh_token, refresh_expires_at: body.refresh_expires_at,
  };
  writePrivate(sessionFile(), stored);
  return stored;
}

/** The stored session, renewed with its refresh value when it has ended (or is about to). */
async function liveSession(): Promise<StoredSession> {
  const stored = readJson<StoredSession>(sessionFile());
  if (!stored) throw new UsageError('not signed in: run keyward login --gateway <url> --org <org_id>');
  if (Date.parse(stored.expires_at) - Date.now() > 60_000) return stored;
  const r = await call(`${stored.gateway}/v1/session/refresh`, { method: 'POST', body: { refresh_token: stored.refresh_token } });
  if (r.status !== 201) throw new Error('the session has ended and could not be renewed: run keyward login again');
  return save(stored.gateway, stored.org, r.body);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** RFC 8628 through the gateway: prints the link and code, polls until the person has signed in. */
async function deviceSignIn(ctx: Context, gateway: string, org: string): Promise<any> {
  const started = await call(`${gateway}/v1/sso/device`, { method: 'POST', body: { org } });
  if (started.status !== 200) throw failure(started);
  const d = started.body;
  ctx.io.stderr.write(`To sign in, open ${d.verification_uri_complete ?? d.verification_uri}\nand confirm the code ${d.user_code}.\n`);
  let interval = Math.max(1, Number(d.interval) || 5) * 1000;
  const deadline = Date.now() + Math.min(Number(d.expires_in) * 1000 || POLL_CAP_MS, POLL_CAP_MS);
  // Tests poll faster than providers allow people to (never below the provider's interval in real use).
  const testInterval = Number(process.env.KEYWARD_LOGIN_POLL_MS);
  if (testInterval > 0) interval = testInterval;
  while (Date.now() < deadline) {
    await sleep(interval);
    const r = await call(`${gateway}/v1/sso/device/token`, { method: 'POST', body: { device_handle: d.device_handle } });
    if (r.status === 201) return r.body;
    if (r.body?.error?.code !== 'authorization_pending') throw failure(r);
  }
  throw new Error('the sign-in was not completed in time: run keyward login again');
}

const DONE_PAGE = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Keyward</title></head><body><main><h1>Signed in</h1><p>You can close this tab and go back to the terminal.</p></main></body></html>';

/**
 * RFC 8252 through the gateway: a listener on 127.0.0.1 (a free port) for the browser's way back, the sign-in
 * link printed, and the one-time code redeemed with the PKCE verifier (openid-client makes both).
 */
async function loopbackSignIn(ctx: Context, gateway: string, org: string): Promise<any> {
  const oidc = await import('openid-client');
  const verifier = oidc.randomPKCECodeVerifier();
  const challenge = await oidc.calculatePKCECodeChallenge(verifier);
  let settle!: (code: string) => void;
  const arrived = new Promise<string>((resolve) => (settle = resolve));
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const code = url.searchParams.get('code');
    if (req.method !== 'GET' || url.pathname !== '/callback' || !code) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': "default-src 'none'" }).end(DONE_PAGE);
    settle(code);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const redirect = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
    const link = `${gateway}/v1/sso/start?${new URLSearchParams({ org, cli_redirect: redirect, cli_challenge: challenge })}`;
    ctx.io.stderr.write(`To sign in, open ${link}\nin a browser on this machine.\n`);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('the sign-in was not completed in time: run keyward login again')), POLL_CAP_MS);
    });
    const code = await Promise.race([arrived, timeout]).finally(() => clearTimeout(timer));
    const r = await call(`${gateway}/v1/sso/cli/token`, { method: 'POST', body: { code, code_verifier: verifier } });
    if (r.status !== 201) throw failure(r);
    return r.body;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

export const LOGIN_COMMANDS: Command[] = [{
  words: ['login'],
  args: [],
  options: ['gateway', 'org'],
  summary: 'sign in to a gateway with your organisation\'s single sign-on (device code, else a browser on this machine), for keyward token',
  details: 'Prints where to sign in (and the code, for a device sign-in) on stderr, waits until you have, and keeps the session (0600) in the user\'s config directory. --org takes the organisation\'s id or name.',
  async run(ctx: Context) {
    const gateway = gatewayUrl(required(ctx, 'gateway'));
    const org = required(ctx, 'org');
    const provider = await call(`${gateway}/v1/sso/provider?${new URLSearchParams({ org })}`, { method: 'GET' });
    if (provider.status !== 200) throw failure(provider);
    const body = provider.body.device_grant === true ? await deviceSignIn(ctx, gateway, org) : await loopbackSignIn(ctx, gateway, org);
    const stored = save(gateway, org, body);
    ctx.io.stderr.write(`Signed in as ${stored.member.email ?? stored.member.id}.\n`);
    if (ctx.json) ctx.io.stdout.write(JSON.stringify({ member: body.member, expires_at: body.expires_at }) + '\n');
  },
}, {
  words: ['token'],
  args: [],
  options: ['credential', 'pool', 'ttl'],
  flags: {
    credential: 'the credential the personal token uses',
    ttl: 'the personal token\'s lifetime: a positive integer and one unit of s m h d (default 1h)',
  },
  summary: 'print a personal proxy token for the signed-in member (for apiKeyHelper), cached until 5 minutes before it ends',
  async run(ctx: Context) {
    const credential = one(ctx, 'credential');
    const pool = one(ctx, 'pool');
    if ((credential === undefined) === (pool === undefined)) throw new UsageError('give one of --credential and --pool');
    const ttl = one(ctx, 'ttl') ?? '1h';
    const stored = readJson<StoredSession>(sessionFile());
    if (!stored) throw new UsageError('not signed in: run keyward login --gateway <url> --org <org_id>');
    const key = JSON.stringify([stored.gateway, stored.org, stored.member.id, credential ?? null, pool ?? null, ttl]);
    const cacheFile = path.join(configDir(), 'token-cache.json');
    const cached = (readJson<CachedToken[]>(cacheFile) ?? []).filter((c) => Date.parse(c.expires_at) - Date.now() > CACHE_MARGIN_MS);
    const hit = cached.find((c) => c.key === key);
    if (hit) {
      ctx.io.stdout.write(hit.token + '\n');
      return;
    }
    const session = await liveSession();
    const r = await call(`${session.gateway}/v1/members/self/tokens`, {
      method: 'POST', bearer: session.session, body: { ...(credential ? { credential_id: credential } : { pool_id: pool }), ttl },
    });
    if (r.status !== 201) throw failure(r);
    writePrivate(cacheFile, [...cached.filter((c) => c.key !== key), { key, token: r.body.token, expires_at: r.body.expires_at }]);
    ctx.io.stdout.write(r.body.token + '\n');
  },
}];
