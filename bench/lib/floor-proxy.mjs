// The floor under Keyward's hot path: the bare proxy (bare-proxy.mjs) plus only the
// pieces a gateway with Keyward's contract and design cannot drop, each switched on by
// name in FLOOR_PARTS (comma-separated), none of Keyward's own code:
//   hp3      forward through http-proxy-3's web() (the design's named proxy library) as Keyward
//            calls it: keep-alive agent, selfHandleResponse, prependPath off, toProxy, a per-request
//            error callback and idle timeout, the response head written by us, then the body relayed
//   hash     the presented token hashed (sha256) and looked up in a Map (the token cache)
//   log      one JSON line per request in Cloud Logging's shape through pino, the lines of a turn
//            written together (as src/log.ts does)
//   metrics  prom-client: a request counter by provider and status, two latency histograms
//   mask     the response body read chunk by chunk: a search for the key (the masker) and the usage
//            keys' regex (the usage reader), instead of a plain pipe
// It answers the question the ab row can then put in numbers: what do these pieces alone cost
// against the bare proxy, before any of Keyward's code runs?
// Usage: PORT=… UPSTREAM=127.0.0.1:9000 BENCH_KEY=sk-… FLOOR_PARTS=hp3,hash,log,metrics,mask FLOOR_LOG=file node bench/lib/floor-proxy.mjs
// (the ab row runs it as a variant named floor:<parts>, e.g. floor:hp3 or floor:hp3,hash,log,metrics,mask)
import { hash as cryptoHash } from 'node:crypto';
import { openSync, writeSync } from 'node:fs';
import http from 'node:http';
import { ProxyServer } from 'http-proxy-3';
import { pino } from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';

const parts = new Set((process.env.FLOOR_PARTS ?? '').split(',').filter(Boolean));
for (const p of parts) if (!['hp3', 'hash', 'log', 'metrics', 'mask'].includes(p)) throw new Error(`unknown FLOOR_PARTS entry ${p}`);
const [host, port] = process.env.UPSTREAM.split(':');
const key = `Bearer ${process.env.BENCH_KEY}`;
const keyBytes = Buffer.from(process.env.BENCH_KEY);
const agent = new http.Agent({ keepAlive: true, keepAliveMsecs: 30_000, maxSockets: Infinity, maxFreeSockets: 256, scheduling: 'lifo' });
const target = new URL(`http://${host}:${port}`);

// hash: any ptok_ presented maps to one entry, as a warm token cache would.
const tokens = new Map();
const tokenEntry = { org: 'org_1', credential: 'cred_1', provider: 'openai' };
function lookup(token) {
  const h = cryptoHash('sha256', token ?? '', 'hex');
  let e = tokens.get(h);
  if (!e && tokens.size < 1000) tokens.set(h, (e = tokenEntry));
  return e;
}

// log: pino as src/log.ts configures it, the lines of one turn written with one write, to FLOOR_LOG (a file, as
// the bench gives Keyward's stdout).
const logFd = parts.has('log') ? openSync(process.env.FLOOR_LOG ?? '/dev/null', 'a') : -1;
let pending = '';
let scheduled = false;
const flush = () => {
  scheduled = false;
  if (pending !== '') writeSync(logFd, pending);
  pending = '';
};
const logger = parts.has('log') ? pino({ messageKey: 'message', base: undefined, formatters: { level: (l) => ({ severity: l.toUpperCase() }) } }, {
  write(line) {
    pending += line;
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  },
}) : undefined;

// metrics: bound children, as src/metrics.ts keeps them.
const registry = new Registry();
const requests = new Counter({ name: 'proxy_requests_total', help: 'h', labelNames: ['provider', 'status'], registers: [registry] });
const latency = new Histogram({ name: 'upstream_seconds', help: 'h', labelNames: ['provider'], registers: [registry] }).labels('openai');
const ttfb = new Histogram({ name: 'ttfb_seconds', help: 'h', labelNames: ['provider'], registers: [registry] }).labels('openai');
const byStatus = new Map();

const USAGE = /"(prompt_tokens|completion_tokens|input_tokens|output_tokens)"\s*:\s*(\d+)/g;

function finish(req, res, started, ttfbMs, bytes) {
  if (parts.has('metrics')) {
    let c = byStatus.get(res.statusCode);
    if (!c) byStatus.set(res.statusCode, (c = requests.labels('openai', String(res.statusCode))));
    c.inc();
    latency.observe(Number(process.hrtime.bigint() - started) / 1e9);
    ttfb.observe(ttfbMs / 1000);
  }
  if (logger) {
    logger.info({
      httpRequest: { requestMethod: req.method, requestUrl: req.url, status: res.statusCode, responseSize: String(bytes), latency: `${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(6)}s`, remoteIp: req.socket.remoteAddress },
      keyward: { request_id: 'req_0123456789abcdef0123456789abcdef', org: 'org_1', credential: 'cred_1', token: 'tok_1', provider: 'openai', forwarded: true, ttfb_ms: ttfbMs },
    }, 'proxy request');
  }
}

/** The response body to the caller: piped, or (mask) read chunk by chunk for the key and the usage keys. */
function relay(upstream, res, done) {
  if (!parts.has('mask')) {
    let bytes = 0;
    upstream.on('data', (c) => (bytes += c.length));
    upstream.on('end', () => done(bytes));
    upstream.pipe(res);
    return;
  }
  let bytes = 0;
  let tokensSeen = 0;
  upstream.on('data', (chunk) => {
    if (chunk.indexOf(keyBytes) !== -1) chunk = Buffer.from(chunk.toString('latin1').replaceAll(process.env.BENCH_KEY, '*'), 'latin1');
    for (const m of chunk.toString('latin1').matchAll(USAGE)) tokensSeen += Number(m[2]);
    bytes += chunk.length;
    if (!res.write(chunk)) upstream.pause();
  });
  res.on('drain', () => upstream.resume());
  upstream.on('end', () => {
    res.end();
    done(bytes, tokensSeen);
  });
}

const proxy = parts.has('hp3') ? new ProxyServer({ xfwd: false, changeOrigin: false, selfHandleResponse: true, followRedirects: false, secure: true }) : undefined;
const flights = new WeakMap();
if (proxy) {
  proxy.on('proxyReq', (proxyReq, req) => {
    proxyReq.setTimeout(300_000, () => proxyReq.destroy());
    flights.get(req).proxyReq = proxyReq;
  });
  proxy.on('proxyRes', (proxyRes, req, res) => {
    const f = flights.get(req);
    const ttfbMs = Number(process.hrtime.bigint() - f.started) / 1e6;
    res.writeHead(proxyRes.statusCode, proxyRes.rawHeaders);
    relay(proxyRes, res, (bytes) => finish(req, res, f.started, ttfbMs, bytes));
  });
  proxy.on('error', () => {});
  proxy.on('econnreset', () => {});
}

const server = http.createServer((req, res) => {
  const started = process.hrtime.bigint();
  if (parts.has('hash') && !lookup(req.headers['x-proxy-token'])) {
    res.writeHead(401).end();
    return;
  }
  const headers = { ...req.headers, authorization: key };
  delete headers['x-proxy-token'];
  if (proxy) {
    flights.set(req, { started });
    const original = { url: req.url, headers: req.headers };
    req.url = req.url.slice(9);
    req.headers = headers;
    proxy.web(req, res, { target, prependPath: false, toProxy: true, agent, connectTimeout: 10_000 }, () => res.destroy());
    req.url = original.url;
    req.headers = original.headers;
    return;
  }
  // Without hp3: bare-proxy.mjs's forwarding line for line (kept apart: the yardstick stays one self-contained file).
  const up = http.request({ host, port, method: req.method, path: req.url.slice(9), headers, agent }, (r) => {
    const ttfbMs = Number(process.hrtime.bigint() - started) / 1e6;
    res.writeHead(r.statusCode, r.headers);
    relay(r, res, (bytes) => finish(req, res, started, ttfbMs, bytes));
  });
  up.on('error', () => res.destroy());
  res.on('close', () => res.writableFinished || up.destroy());
  req.pipe(up);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
