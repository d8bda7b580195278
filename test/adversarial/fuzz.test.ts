/**
 * Fuzz: a stream of random and mutated requests against every admin endpoint and the proxy of a spawned
 * gateway (node dist/src/main.js, logging at debug): methods, paths, query strings, header names and values,
 * tokens and bodies (random JSON, truncated JSON, wrong types, huge strings, deep nesting), plus mutated raw
 * bytes on bare sockets. Zero 5xx, every error in the contract's shape, no crash, memory flat, no secret in
 * any response, log line or store file.
 *
 * fast-check (test/support/property.ts) drives it: each run sends a batch of CONCURRENCY requests at once,
 * each drawn with `fc.gen()` from what exists at that moment (ids and tokens the run has seen); a batch with
 * a failing answer shrinks to the one request that fails (its draws shrink as far as `fc.gen()` allows) and
 * the report prints the seed, the path and the request. KEYWARD_PROPERTY_SEED replays a run (the seed alone,
 * or with the path's first number only: a gen-based property cannot replay a deeper path).
 *
 * KEYWARD_FUZZ_COUNT sets the number of requests: 3000 by default (npm test), 20000 with `npm run test:fuzz`.
 * The gateway runs with a 64 MB old space (KEYWARD_FUZZ_HEAP_MB), so a leak is a crash.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ADMIN_TOKEN, api, createCredential, createOrg, mintToken, spawnServer, tempDir, type Org } from '../support/app.js';
import { canary, leakForms, NO_ABUSE_LIMITS, parseRaw, storeBytes } from './_harness.js';
import { checkProperty, drawsFrom, envInt, independentGen, maybe, type Draws as Rng } from '../support/property.js';

const COUNT = envInt('KEYWARD_FUZZ_COUNT', 3000);
const CONCURRENCY = 8;
/** Requests per fast-check run: a few rounds of CONCURRENCY, so that one slow answer holds up little. */
const BATCH = 4 * CONCURRENCY;

const TCHAR = '!#$%&\'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const ALPHABETS = [
  'abcdefghijklmnopqrstuvwxyz0123456789',
  ' !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~abcXYZ019',
  'ptok_otok_cred_tok_org_',
  'é中文🙂\u202e\u200b\u0000\u0001\u001f\u007f\ud83d\uffff',
  '.%/\\:;?#@',
];

function str(r: Rng, max = 40, huge = true): string {
  const chars = [...r.pick(ALPHABETS)];
  return r.text(chars, huge && r.chance(0.03) ? r.int(300_000) : r.int(max));
}

function json(r: Rng, depth = 0): unknown {
  const k = r.int(depth > 3 ? 6 : 9);
  switch (k) {
    case 0: return null;
    case 1: return r.chance(0.5);
    case 2: return r.pick([0, -1, 1, 1.5, 1e308, -1e-308, 2 ** 53, Number.MAX_SAFE_INTEGER + 2, 15, 60, 1000]);
    case 3: case 4: return str(r);
    case 5: return r.pick(['15m', '1s', '0s', '01m', '30d', '31d', '1h ', 'openai', 'anthropic', 'gemini', 'nope', '', 'v1/chat/completions', 'gpt-*', '*']);
    case 6: return Array.from({ length: r.int(5) }, () => json(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = r.int(5); i > 0; i--) o[r.chance(0.6) ? r.pick(FIELDS) : str(r, 12, false)] = json(r, depth + 1);
      return o;
    }
  }
}

const FIELDS = ['provider', 'api_key', 'credential_id', 'ttl', 'models', 'paths', 'max_requests', 'rate_limit', 'name', 'grace_s', 'model', 'messages', 'stream', '__proto__', 'constructor'];

interface World {
  orgs: Org[];
  credentials: string[];
  tokens: Array<{ id: string; token: string }>;
  secrets: string[];
}

function mutateToken(r: Rng, tok: string): string {
  switch (r.int(8)) {
    case 0: return tok.slice(0, r.int(tok.length));
    case 1: return tok + str(r, 5, false).replace(/[^\x21-\x7e]/g, 'x');
    case 2: return tok.toUpperCase();
    case 3: { const i = r.int(tok.length); return tok.slice(0, i) + r.pick([...TCHAR]) + tok.slice(i + 1); }
    case 4: return `${tok},${tok}`;
    case 5: return tok.replace(/^[po]tok_/, r.pick(['ptok_', 'otok_', 'PTOK_', '']));
    case 6: return tok.repeat(1 + r.int(r.chance(0.1) ? 300 : 5));
    default: return tok;
  }
}

/** A body that makes sense for `kind`, or (often) a broken or random one. */
function body(r: Rng, world: World, kind: string): string | Buffer | undefined {
  const cred = () => (world.credentials.length && r.chance(0.8) ? r.pick(world.credentials) : str(r, 30));
  const sensible: Partial<Record<string, () => unknown>> = {
    'credential.create': () => ({ provider: r.pick(['openai', 'anthropic', 'gemini', 'mistral', 'groq']), api_key: `sk-fuzz-${r.int(1e9)}-xxxxxxxx` }),
    'credential.rotate': () => ({ api_key: `sk-fuzz-rotated-${r.int(1e9)}` }),
    'token.create': () => ({ credential_id: cred(), ttl: r.pick(['15m', '1m', '1h', '1d']), ...(r.chance(0.3) ? { max_requests: 1 + r.int(5) } : {}), ...(r.chance(0.2) ? { models: ['gpt-*'] } : {}), ...(r.chance(0.2) ? { rate_limit: 1 + r.int(30) } : {}) }),
    'org.create': () => ({ name: `fuzz org ${r.int(1000)}` }),
    'org.rotate': () => ({ grace_s: r.pick([3600, 86_400]) }),
    'proxy.post': () => ({ model: r.pick(['gpt-x', 'claude-x', 'gemini-x']), messages: [{ role: 'user', content: str(r, 200, false) }], stream: r.chance(0.5), max_tokens: 5 }),
  };
  const make = sensible[kind];
  switch (r.int(make ? 14 : 8)) {
    case 0: return undefined;
    case 1: return JSON.stringify(json(r));
    case 2: { const text = JSON.stringify(make ? make() : json(r)); return text.slice(0, r.int(text.length + 1)); }
    case 3: return r.chance(0.5) ? '['.repeat(r.int(50_000)) + ']'.repeat(r.int(50_000)) : '{"a":'.repeat(r.int(5_000)) + '1' + '}'.repeat(r.int(5_000));
    case 4: return r.bytes(r.int(2000));
    case 5: return 'x'.repeat(r.int(1_300_000)); // up to past KEYWARD_MAX_BODY
    case 6: { // a sensible body with one field broken
      const o = (make ? make() : json(r)) as Record<string, unknown>;
      if (o && typeof o === 'object') {
        const keys = Object.keys(o);
        if (keys.length && r.chance(0.5)) o[r.pick(keys)] = json(r);
        else if (r.chance(0.5)) o[r.pick(FIELDS)] = json(r);
        else if (keys.length) delete o[r.pick(keys)];
      }
      return JSON.stringify(o);
    }
    case 7: return JSON.stringify({ ...(make ? (make() as object) : {}), pad: str(r, 100) });
    default: return JSON.stringify(make!());
  }
}

const PROXY_PATHS: Array<[string, string]> = [
  ['POST', 'v1/chat/completions'], ['GET', 'v1/models'], ['GET', 'v1/models/gpt-x'], ['POST', 'v1/messages'], ['GET', 'v1/messages/batches'],
  ['DELETE', 'v1/responses/resp_1'], ['POST', 'v1/embeddings'], ['POST', 'v1beta/models/gemini-x:generateContent'],
  ['POST', 'v1beta/models/gemini-x:streamGenerateContent'], ['GET', 'v1beta/models'], ['POST', 'v1beta/openai/chat/completions'],
];

interface Endpoint {
  method: string;
  path: () => string;
  auth: 'org' | 'admin' | 'proxy' | 'none';
  kind: string;
}

/** One endpoint: one of the 14 admin ones or (six times in twenty) a proxy path, drawn only when a proxy one is picked. */
function endpoint(r: Rng, world: World): Endpoint {
  const cred = () => (r.chance(0.85) && world.credentials.length ? r.pick(world.credentials) : r.pick(['cred_' + 'A'.repeat(24), str(r, 30, false)]));
  const tok = () => (r.chance(0.85) && world.tokens.length ? r.pick(world.tokens).id : r.pick(['tok_' + 'A'.repeat(24), str(r, 30, false)]));
  const list = () => (r.chance(0.5) ? '' : `?limit=${r.pick(['1', '5', '100', '0', '101', 'x'])}${r.chance(0.3) ? `&starting_after=${r.chance(0.5) ? cred() : tok()}` : ''}`);
  const proxy = (): Endpoint => {
    const [method, p] = r.pick(PROXY_PATHS);
    return { method, path: () => `/v1/proxy/${p}${r.chance(0.2) ? '?alt=sse' : ''}`, auth: 'proxy', kind: method === 'POST' ? 'proxy.post' : 'proxy.get' };
  };
  const admin: Endpoint[] = [
    { method: 'POST', path: () => '/v1/credentials', auth: 'org', kind: 'credential.create' },
    { method: 'GET', path: () => `/v1/credentials${list()}`, auth: 'org', kind: 'list' },
    { method: 'GET', path: () => `/v1/credentials/${cred()}`, auth: 'org', kind: 'get' },
    { method: 'POST', path: () => `/v1/credentials/${cred()}/rotate`, auth: 'org', kind: 'credential.rotate' },
    { method: 'DELETE', path: () => `/v1/credentials/${r.chance(0.3) ? cred() : 'cred_' + 'B'.repeat(24)}`, auth: 'org', kind: 'delete' },
    { method: 'POST', path: () => '/v1/tokens', auth: 'org', kind: 'token.create' },
    { method: 'GET', path: () => `/v1/tokens${list()}`, auth: 'org', kind: 'list' },
    { method: 'GET', path: () => `/v1/tokens/${tok()}`, auth: 'org', kind: 'get' },
    { method: 'DELETE', path: () => `/v1/tokens/${r.chance(0.3) ? tok() : 'tok_' + 'B'.repeat(24)}`, auth: 'org', kind: 'delete' },
    { method: 'GET', path: () => '/v1/usage', auth: 'org', kind: 'get' },
    { method: 'GET', path: () => `/v1/audit${list()}`, auth: 'org', kind: 'list' },
    { method: 'POST', path: () => '/v1/orgs', auth: 'admin', kind: 'org.create' },
    { method: 'POST', path: () => '/v1/orgs/self/token/rotate', auth: 'org', kind: 'org.rotate' },
    { method: 'GET', path: () => r.pick(['/healthz', '/readyz', '/metrics', '/v1/openapi.json']), auth: 'none', kind: 'get' },
  ];
  const i = r.int(admin.length + 6);
  return i < admin.length ? admin[i]! : proxy();
}

/** Percent-encodes UTF-8 bytes (lone surrogates become U+FFFD): fully, or only what a request target cannot carry. */
function enc(r: Rng, s: string): string {
  const full = r.chance(0.5);
  return [...Buffer.from(s, 'utf8')].map((b) => (b > 0x20 && b < 0x7f && (!full || /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b))) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`)).join('');
}

function mutatePath(r: Rng, p: string): string {
  switch (r.int(9)) {
    case 0: return p.replace(/\//g, () => r.pick(['/', '//', '/./', '/%2f', '/../', '/%2e%2e/']));
    case 1: return p + '/' + enc(r, str(r, 20, false));
    case 2: return p.replace(/[a-z]/, (c) => c.toUpperCase());
    case 3: return '/' + enc(r, str(r, 60, false));
    case 4: return p.replace('/v1/proxy/', r.pick(['/v1/proxy//', '/v1/proxy/%2e%2e/', '/v1/proxy/http://evil.test/', '/v1/proxy/..\\', '/v1/proxy/;/']));
    case 5: return p + (p.includes('?') ? '&' : '?') + Array.from({ length: 1 + r.int(4) }, () => `${r.pick(['limit', 'starting_after', 'key', 'access_token', 'alt', enc(r, str(r, 8, false))])}=${enc(r, str(r, 20, false))}`).join('&');
    case 6: return p + '%00';
    case 7: return p.slice(0, r.int(p.length + 1)) || '/';
    default: return p.replace(/\/[^/?]*$/, '/' + enc(r, str(r, 30, false)));
  }
}

function headers(r: Rng, world: World, auth: Endpoint['auth']): Record<string, string> {
  const h: Record<string, string> = {};
  const orgTok = () => r.pick(world.orgs).token;
  const proxyTok = () => (world.tokens.length ? r.pick(world.tokens).token : 'ptok_none');
  const right = { org: () => `Bearer ${orgTok()}`, admin: () => `Bearer ${ADMIN_TOKEN}`, proxy: () => proxyTok(), none: () => '' }[auth]();
  if (r.chance(0.75)) {
    if (auth === 'proxy') h[r.pick(['x-proxy-token', 'x-proxy-token', 'x-api-key', 'x-goog-api-key'])] = right;
    else if (right) h.authorization = right;
  } else {
    // The wrong credential, a mutated one, or one in the wrong place.
    const wrong = r.pick([`Bearer ${mutateToken(r, orgTok())}`, `Bearer ${proxyTok()}`, `Bearer ${ADMIN_TOKEN}`, 'Bearer', 'Basic eDp5', mutateToken(r, proxyTok()), orgTok(), str(r, 30, false).replace(/[^\x20-\x7e]/g, '')]);
    h[r.pick(['authorization', 'x-proxy-token', 'x-api-key'])] = wrong;
  }
  if (r.chance(0.6)) h['content-type'] = r.pick(['application/json', 'application/json', 'text/plain', 'application/json; charset=utf-16', 'multipart/form-data; boundary=x']);
  if (r.chance(0.15)) h['idempotency-key'] = r.chance(0.8) ? `fuzz-${r.int(40)}` : str(r, 300, false).replace(/[^\x20-\x7e]/g, '');
  for (let i = r.int(r.chance(0.05) ? 30 : 4); i > 0; i--) {
    let name = r.text([...TCHAR], 1 + r.int(20));
    if (r.chance(0.3)) name = r.pick(['connection', 'te', 'upgrade', r.chance(0.3) ? 'expect' : 'accept', 'x-forwarded-for', 'forwarded', 'cookie', 'x-http-method-override', 'accept-encoding', 'range', 'if-none-match', 'traceparent', 'x-cloud-trace-context', 'user-agent', 'content-encoding', 'host']);
    // Values: visible ASCII and obs-text (latin1), as Node's client allows.
    h[name.toLowerCase()] = str(r, r.chance(0.03) ? 6000 : 60, false).replace(/[^\x20-\x7e\x80-\xff]/g, (c) => (c.charCodeAt(0) < 0x100 ? '' : 'ü'));
  }
  return h;
}

/** A valid request as raw bytes, then mutated: flipped, inserted, dropped or duplicated bytes and lines. */
function rawMutant(r: Rng, world: World): Buffer {
  const b = Buffer.from(JSON.stringify({ model: 'm', messages: [] }));
  const e = endpoint(r, world);
  const lines = [`${e.method} ${e.path()} HTTP/1.1`, 'Host: x', `X-Proxy-Token: ${world.tokens.length ? r.pick(world.tokens).token : 'x'}`,
    `Authorization: Bearer ${r.pick(world.orgs).token}`, 'Content-Type: application/json', `Content-Length: ${b.length}`, 'Connection: close'];
  if (r.chance(0.3)) lines.splice(1 + r.int(lines.length - 1), 0, r.pick(['Transfer-Encoding: chunked', `Content-Length: ${r.int(100)}`, 'Host: evil.test', ' folded', 'X: a\rb', 'X\x00: y']));
  let bytes = Buffer.from(lines.join('\r\n') + '\r\n\r\n' + b.toString());
  for (let i = 1 + r.int(4); i > 0; i--) {
    const at = r.int(bytes.length);
    switch (r.int(4)) {
      case 0: bytes[at] = r.int(256); break;
      case 1: bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(r.pick(['\r\n', '\n', '\r', '\x00', ' ', ':', '%', '\r\n\r\n', '0\r\n\r\n'])), bytes.subarray(at)]); break;
      case 2: bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1 + r.int(10))]); break;
      default: bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at, at + r.int(40)), bytes.subarray(at)]);
    }
  }
  return bytes;
}

interface Outcome {
  kind: 'http' | 'raw';
  label: string;
  status: number;
  text: string;
  error?: string;
}

/** One fuzzed request over the shared agent, path and headers as generated (not request(): no URL normalisation, any outcome kept). */
function send(agent: http.Agent, port: number, method: string, p: string, h: Record<string, string>, b: string | Buffer | undefined): Promise<Outcome> {
  return new Promise((resolve) => {
    const label = `${method} ${p.slice(0, 120)}`;
    let req: http.ClientRequest;
    try {
      req = http.request({ host: '127.0.0.1', port, method, path: p, headers: b === undefined ? h : { ...h, 'content-length': String(Buffer.byteLength(b)) }, agent, timeout: 15_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ kind: 'http', label, status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('latin1') }));
        res.on('error', (e) => resolve({ kind: 'http', label, status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('latin1'), error: e.message }));
      });
    } catch (e) {
      // The client itself refused to build it (invalid characters): not a request.
      resolve({ kind: 'http', label, status: -1, text: '', error: (e as Error).message });
      return;
    }
    req.on('timeout', () => req.destroy(new Error('no answer in 15 s')));
    req.on('error', (e) => resolve({ kind: 'http', label, status: 0, text: '', error: e.message }));
    req.end(b);
  });
}

/** Mutated bytes straight to a socket (bytes request() cannot send); what came back within 4 s. */
function sendRaw(port: number, bytes: Buffer): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let raw = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ kind: 'raw', label: JSON.stringify(bytes.toString('latin1').slice(0, 120)), status: parseRaw(raw).status, text: raw });
    };
    const timer = setTimeout(done, 4000);
    socket.on('data', (d) => (raw += d.toString('latin1')));
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', () => socket.end(bytes));
  });
}

function rss(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

test(`fuzz: ${COUNT} random and mutated requests: zero 5xx, errors in the contract's shape, no crash, memory flat, nothing leaked`, async (t) => {
  const timeout = Math.max(120_000, COUNT * 30);
  t.timeout(timeout);
  // A fast upstream that always answers 200 JSON (so any 5xx would be the gateway's own), whatever the
  // headers' size. It echoes the path only: what a caller puts in its own query or body is its business.
  const upstream = http.createServer({ maxHeaderSize: 256 * 1024 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      const text = JSON.stringify({ ok: true, path: (req.url ?? '').split('?')[0] });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    upstream.closeAllConnections();
    upstream.close(() => r());
  }));
  const up = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const dataDir = tempDir(t);
  const server = await spawnServer(t, {
    ...NO_ABUSE_LIMITS,
    KEYWARD_DATA_DIR: dataDir,
    KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'),
    KEYWARD_LOG_LEVEL: 'debug',
    KEYWARD_MAX_BODY: '1mb',
    KEYWARD_FREE_CREDENTIALS: '100000',
    KEYWARD_FREE_PROXY_REQUESTS: '1000000000',
    KEYWARD_HEADERS_TIMEOUT_MS: '2000',
    KEYWARD_BODY_TIMEOUT_MS: '3000',
    KEYWARD_UPSTREAM_OPENAI: up,
    KEYWARD_UPSTREAM_ANTHROPIC: up,
    KEYWARD_UPSTREAM_GEMINI: up,
    // The fuzzer also creates Mistral and Groq credentials (body's credential.create) and proxies through them.
    KEYWARD_UPSTREAM_MISTRAL: up,
    KEYWARD_UPSTREAM_GROQ: up,
    // A small old space: V8 otherwise grows the heap lazily (RSS climbs with garbage, not a leak); capped,
    // a real leak shows as an out-of-memory crash, and RSS as the live set.
    NODE_OPTIONS: `--max-old-space-size=${process.env.KEYWARD_FUZZ_HEAP_MB ?? 64}`,
  });
  const pid = server.proc.pid!;
  const world: World = { orgs: [], credentials: [], tokens: [], secrets: [] };
  const provision = async (org: Org) => {
    for (const provider of ['openai', 'anthropic', 'gemini']) {
      const key = canary(`fuzz-${provider}`);
      world.secrets.push(key);
      try {
        const id = await createCredential(server.url, org, provider, key);
        world.credentials.push(id);
        const tok = await mintToken(server.url, org, id, '1d', provider === 'openai' && world.tokens.length > 3 ? { models: ['gpt-*'], max_requests: 1000 } : {});
        world.tokens.push(tok);
        world.secrets.push(tok.token);
      } catch { /* the fuzzer rotated this org's token away: another org will do */ }
    }
  };
  for (const name of ['fuzz-a', 'fuzz-b']) {
    const org = await createOrg(server.url, name);
    world.orgs.push(org);
    world.secrets.push(org.token);
    await provision(org);
  }

  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  t.teardown(() => agent.destroy());
  const counts = new Map<number, number>();
  let networkErrors = 0;
  let clientRefused = 0;
  const samples: Array<[number, number]> = [];
  /** Each secret's leak forms, computed once (the list is rebuilt whenever a secret joins the world). */
  const formsOf = new Map<string, string[]>();
  const secretForms = () => world.secrets.flatMap((s) => {
    let f = formsOf.get(s);
    if (!f) formsOf.set(s, (f = s.startsWith('sk-') ? leakForms(s) : [s]));
    return f;
  });
  let forms = secretForms();
  let formsCover = world.secrets.length;
  /** Secrets only ever join: the forms are rebuilt when there are more. */
  const refreshForms = () => {
    if (world.secrets.length === formsCover) return;
    forms = secretForms();
    formsCover = world.secrets.length;
  };
  let sent = 0;
  /** The batch during which the gateway died, once (later batches only meet a closed port). */
  let death: string | undefined;
  const started = Date.now();

  // Every choice is a draw of the run's fast-check generator; ids and tokens are drawn from what exists at that moment.
  type Planned = { raw: Buffer } | { method: string; path: string; headers: Record<string, string>; body: string | Buffer | undefined };
  const plan = (r: Rng, world: World): Planned => {
    if (r.chance(0.03)) return { raw: rawMutant(r, world) };
    const e = endpoint(r, world);
    const method = r.chance(0.85) ? e.method : r.pick(['GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'FOO', 'M-SEARCH', 'PROPFIND']);
    const path = r.chance(0.75) ? e.path() : mutatePath(r, e.path());
    const wantsBody = method === 'POST' || method === 'PUT' || method === 'PATCH';
    return { method, path, headers: headers(r, world, e.auth), body: wantsBody || r.chance(0.1) ? body(r, world, e.kind) : undefined };
  };
  /** What a failure report shows of a request: enough to send it again. */
  const describe = (p: Planned): string => ('raw' in p
    ? `raw ${JSON.stringify(p.raw.toString('latin1').slice(0, 600))}`
    : `${p.method} ${JSON.stringify(p.path.slice(0, 300))} headers ${JSON.stringify(p.headers).slice(0, 600)} body ${p.body === undefined ? 'none' : `${Buffer.byteLength(p.body)} bytes ${JSON.stringify(p.body.toString('latin1').slice(0, 200))}`}`);

  /** What is wrong with one answer (nothing: undefined); learns new ids and tokens from what succeeded, as a client would. */
  const judge = (o: Outcome): string | undefined => {
    counts.set(o.status, (counts.get(o.status) ?? 0) + 1);
    if (o.status === -1) {
      clientRefused++;
      return undefined;
    }
    if (o.status === 0) {
      if (o.kind === 'http') networkErrors++;
      return o.error?.includes('no answer') ? 'no answer' : undefined;
    }
    if (o.status >= 500) return `${o.status}: ${o.text.slice(0, 200)}`;
    // Every error is the gateway's own (the upstream only ever answers 200): the contract's shape.
    if (o.kind === 'http' && o.status >= 400 && !o.label.startsWith('HEAD ') && o.status !== 408 && !o.error) {
      let shaped = false;
      try {
        const e = JSON.parse(o.text).error;
        shaped = typeof e.type === 'string' && typeof e.code === 'string' && typeof e.message === 'string';
      } catch { /* not JSON */ }
      if (!shaped) return `unshaped ${o.status}: ${o.text.slice(0, 200)}`;
    }
    if (forms.some((f) => o.text.includes(f))) return 'a secret in the response';
    // New ids and tokens join the world (and the secrets).
    if (o.kind === 'http' && (o.status === 200 || o.status === 201)) {
      let b: any;
      try {
        b = JSON.parse(o.text);
      } catch { /* a proxied body */ }
      if (b?.object === 'organization' && typeof b.token === 'string') {
        const known = world.orgs.find((x) => x.id === b.id);
        if (known) known.token = b.token;
        else world.orgs.push({ id: b.id, token: b.token });
        world.secrets.push(b.token);
      } else if (b?.object === 'credential' && o.status === 201) {
        world.credentials.push(b.id);
      } else if (b?.object === 'token' && typeof b.token === 'string') {
        world.tokens.push({ id: b.id, token: b.token });
        world.secrets.push(b.token);
      }
      refreshForms();
    }
    return undefined;
  };

  // One run: a batch of BATCH requests, CONCURRENCY at a time, each planned when a worker takes it (a slot is left
  // empty only when shrinking drops it).
  const batch = fc.array(maybe(0.999, independentGen()), { minLength: BATCH, maxLength: BATCH });
  /**
   * The ids and tokens a batch draws from: the world as it was when the batch began. Once a batch has failed, every
   * later run is fast-check shrinking it: they draw from the failing batch's world, so the same draws pick the same
   * ids and tokens (what the gateway has done since can still make a smaller case pass).
   */
  let failing: World | undefined;
  const property = fc.asyncProperty(batch, async (slots) => {
    const seen: World = failing ?? { ...world, orgs: [...world.orgs], credentials: [...world.credentials], tokens: [...world.tokens] };
    const failed = (message: string): Error => {
      failing ??= seen;
      return new Error(message);
    };
    const planned: Planned[] = [];
    const problems: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < slots.length) {
        const g = slots[next++];
        if (!g) continue;
        const draws = drawsFrom(g);
        const p = plan(draws, seen);
        draws.printAs(() => describe(p));
        planned.push(p);
        const o = 'raw' in p ? await sendRaw(server.port, p.raw) : await send(agent, server.port, p.method, p.path, p.headers, p.body);
        const wrong = judge(o);
        if (wrong) problems.push(`${wrong} for ${describe(p)}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    if (server.proc.exitCode !== null || server.proc.signalCode !== null) {
      death ??= planned.map(describe).join('\n');
      throw failed(`the gateway died during the batch:\n${death}`);
    }
    if (problems.length > 0) throw failed(problems.join('\n'));
    const before = sent;
    sent += planned.length;
    if (Math.floor(sent / 500) > Math.floor(before / 500)) {
      samples.push([sent, rss(pid)]);
      // Keep the world alive: the fuzzer deletes credentials and revokes tokens.
      await provision(world.orgs[Math.floor(sent / 500) % world.orgs.length]!);
      refreshForms();
    }
  });
  if (!(await checkProperty(t, property, { numRuns: Math.ceil(COUNT / BATCH), timeLimitMs: timeout - 30_000 }))) return;
  const seconds = (Date.now() - started) / 1000;
  samples.push([sent, rss(pid)]);

  t.log(`${sent} requests in ${seconds.toFixed(1)} s; statuses ${JSON.stringify(Object.fromEntries([...counts].sort((a, b) => a[0] - b[0])))}; ` +
    `${networkErrors} closed without an answer, ${clientRefused} refused by the client library; RSS MB ${samples.map(([i, b]) => `${i}:${Math.round(b / 1048576)}`).join(' ')}`);
  t.true(server.proc.exitCode === null && server.proc.signalCode === null, 'the gateway is alive');
  t.is((await api(server.url, 'GET', '/healthz')).status, 200);
  t.true(networkErrors < COUNT * 0.05, `${networkErrors} connections closed without an answer`);
  // 200, 201, 400, 401, 403, 404, 413, 417 and the client's own refusals come in every run; 0, 409, 429 in some.
  t.true(counts.size >= 9, `a wide spread of outcomes (${counts.size})`);
  t.true((counts.get(200) ?? 0) + (counts.get(201) ?? 0) > COUNT * 0.03, 'some requests got through');
  // Memory flat: after the warm-up quarter, RSS grows by less than 64 MB (and the capped heap never ran out).
  const warm = samples.find(([i]) => i >= COUNT / 4) ?? samples[0]!;
  const peak = Math.max(...samples.filter(([i]) => i >= warm[0]).map(([, b]) => b));
  t.true(peak - warm[1] < 64 * 1024 * 1024, `RSS grew ${Math.round((peak - warm[1]) / 1048576)} MB after the warm-up`);

  const logs = server.lines.join('\n');
  for (const line of server.lines) {
    t.false(/"message":"(uncaught exception|unhandled rejection|admin request failed|proxy request failed)"/.test(line), line.slice(0, 300));
  }
  t.false(server.lines.some((l) => /"status":5\d\d/.test(l) && !/"status":50[24]/.test(l)), 'no 5xx in the access logs');
  for (const f of forms) t.false(logs.includes(f), 'a secret in the logs');
  t.is(await server.kill('SIGTERM'), 0, 'a clean shutdown after all that');
  t.is(server.stderr(), '');
  const db = new DatabaseSync(path.join(dataDir, 'keyward.db'));
  t.is((db.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check, 'ok');
  db.close();
  const bytes = storeBytes(dataDir);
  for (const f of forms) t.false(bytes.includes(f), 'a secret in the store files');
});
