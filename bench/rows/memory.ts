/**
 * The memory row, `npm run bench -- memory`: how much memory large request bodies cost the gateway.
 * Starts the built gateway (`node dist/src/main.js`) as a child process, fresh
 * for each scenario, and prints the peak RSS increase of that process (VmRSS
 * polled from /proc every 5 ms, and VmHWM after a clear_refs reset where the
 * kernel allows it) while eight 30 MB bodies arrive at once:
 *   - admin: POST /v1/credentials, content-length and chunked (bound: < 32 MB)
 *   - proxy through a `models`-scoped token, `model` first and `model` last
 *     (bound: < KEYWARD_BUFFER_BUDGET + 32 MB)
 * and whether a body naming its model first reaches the provider before the
 * caller has sent its last byte. A control row streams the same bodies through
 * a token with no scope (nothing scanned or held): what plain streaming costs,
 * mostly Buffer garbage V8 has not collected yet. The provider is an in-process server that
 * reads and discards bodies. Exits 1 when a bound is not met.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_TOKEN, memory, resetPeak, sleep, startKeyward } from '../lib/servers.js';

const MB = 1024 * 1024;
const BODY_BYTES = 30 * MB;
const CONCURRENCY = 8;
const BUDGET_MB = 64; // KEYWARD_BUFFER_BUDGET's default, used as is
const FILLER = Buffer.alloc(MB, 'x');

/** The provider: reads every body to the end, then answers a small chat completion. */
async function startProvider() {
  const firstBytes = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const tag = String(req.headers['x-bench-tag'] ?? '');
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      bytes += c.length;
      if (tag && !firstBytes.has(tag)) firstBytes.set(tag, bytes);
    });
    req.on('error', () => {});
    req.on('end', () => {
      const text = JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion', received: bytes, usage: { prompt_tokens: 1, completion_tokens: 1 } });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as AddressInfo).port, firstBytes, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

async function postJson(url: string, token: string, body: unknown): Promise<any> {
  const r = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status !== 201) throw new Error(`POST ${url}: ${r.status} ${text}`);
  return JSON.parse(text);
}

interface Outcome {
  status: number | string;
}

/**
 * One request whose body is `head`, then filler up to `total` bytes, then `tail`, written with backpressure.
 * `beforeTail` runs (and is awaited) just before the tail is written.
 */
function send(port: number, urlPath: string, headers: Record<string, string>, head: string, tail: string, total: number, chunked: boolean, beforeTail?: () => Promise<void>): Promise<Outcome> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (o: Outcome) => {
      if (!settled) {
        settled = true;
        resolve(o);
      }
    };
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: urlPath, agent: false, headers: { 'content-type': 'application/json', ...headers, ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(total) }) } }, (res) => {
      res.resume();
      res.on('end', () => settle({ status: res.statusCode ?? 0 }));
      res.on('error', () => settle({ status: res.statusCode ?? 'reset' }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => setTimeout(() => settle({ status: e.code ?? 'error' }), 200));
    const write = (chunk: Buffer | string): Promise<boolean> => new Promise((r) => {
      if (req.destroyed || settled) return r(false);
      if (req.write(chunk)) r(true);
      else {
        const done = () => {
          req.off('drain', done);
          req.off('close', done);
          r(!req.destroyed);
        };
        req.once('drain', done);
        req.once('close', done);
      }
    });
    void (async () => {
      if (!(await write(head))) return;
      let left = total - Buffer.byteLength(head) - Buffer.byteLength(tail);
      while (left > 0) {
        const n = Math.min(left, FILLER.length);
        if (!(await write(n === FILLER.length ? FILLER : FILLER.subarray(0, n)))) return;
        left -= n;
      }
      if (beforeTail) await beforeTail();
      if (!req.destroyed && !settled) req.end(tail);
    })();
  });
}

interface Measured {
  peakMb: number;
  hwmMb: number | undefined;
  statuses: Record<string, number>;
}

/** A fresh gateway, warmed up; runs `load` while sampling the gateway's memory. */
async function scenario(providerPort: number, load: (port: number, ptok: string, org: { token: string }) => Promise<Outcome[]>, scoped = true): Promise<Measured> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'keyward-memory-'));
  const gw = await startKeyward(path.join(dir, 'data'), providerPort, path.join(dir, 'keyward.log'), { env: { KEYWARD_LOG_LEVEL: 'warn' } });
  try {
    const base = `http://127.0.0.1:${gw.port}`;
    const org = await postJson(`${base}/v1/orgs`, ADMIN_TOKEN, { name: 'memory' });
    const cred = await postJson(`${base}/v1/credentials`, org.token, { provider: 'openai', api_key: `sk-bench-${'k'.repeat(40)}` });
    const tok = await postJson(`${base}/v1/tokens`, org.token, { credential_id: cred.id, ttl: '1d', ...(scoped ? { models: ['gpt-4o'] } : {}) });
    // Warm-up: the paths the scenario takes, with small bodies, so code loading is not counted.
    for (let i = 0; i < 20; i++) {
      await send(gw.port, '/v1/proxy/v1/chat/completions', { 'x-proxy-token': tok.token }, '{"model":"gpt-4o","messages":[', ']}', 64 * 1024, false);
      await send(gw.port, '/v1/credentials', { authorization: `Bearer ${org.token}` }, '{"provider":"openai","api_key":"', '"}', 1024, false);
    }
    await sleep(500);
    const pids = gw.pids();
    const baseline = memory(pids).rssMb;
    const hwmReset = resetPeak(pids);
    let peak = baseline;
    const timer = setInterval(() => {
      peak = Math.max(peak, memory(pids).rssMb);
    }, 5);
    const outcomes = await load(gw.port, tok.token, org);
    clearInterval(timer);
    peak = Math.max(peak, memory(pids).rssMb);
    const statuses: Record<string, number> = {};
    for (const o of outcomes) statuses[String(o.status)] = (statuses[String(o.status)] ?? 0) + 1;
    return { peakMb: peak - baseline, hwmMb: hwmReset ? memory(pids).hwmMb - baseline : undefined, statuses };
  } finally {
    await gw.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const eight = (make: (i: number) => Promise<Outcome>): Promise<Outcome[]> => Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => make(i)));

async function main(): Promise<void> {
  const provider = await startProvider();
  const rows: Array<{ name: string; m: Measured; boundMb: number }> = [];
  const run = async (name: string, boundMb: number, load: Parameters<typeof scenario>[1], scoped = true) => {
    const m = await scenario(provider.port, load, scoped);
    rows.push({ name, m, boundMb });
    console.log(`${name.padEnd(52)} peak RSS +${m.peakMb.toFixed(1).padStart(6)} MB${m.hwmMb === undefined ? '' : ` (VmHWM +${m.hwmMb.toFixed(1)} MB)`}  bound < ${boundMb} MB  ${m.peakMb < boundMb ? 'ok' : 'OVER'}  statuses ${JSON.stringify(m.statuses)}`);
  };
  console.log(`${CONCURRENCY} concurrent ${BODY_BYTES / MB} MB bodies; KEYWARD_BUFFER_BUDGET ${BUDGET_MB} MB (default)\n`);

  const adminHead = '{"provider":"openai","api_key":"sk-';
  for (const chunked of [false, true]) {
    await run(`admin POST /v1/credentials (${chunked ? 'chunked' : 'content-length'})`, 32, (port, _ptok, org) =>
      eight(() => send(port, '/v1/credentials', { authorization: `Bearer ${org.token}` }, adminHead, '"}', BODY_BYTES, chunked)));
  }
  const first = '{"model":"gpt-4o","messages":[{"role":"user","content":"';
  const firstTail = '"}]}';
  const lastHead = '{"messages":[{"role":"user","content":"';
  const lastTail = '"}],"model":"gpt-4o"}';
  for (const chunked of [false, true]) {
    await run(`proxy, models scope, model first (${chunked ? 'chunked' : 'content-length'})`, BUDGET_MB + 32, (port, ptok) =>
      eight(() => send(port, '/v1/proxy/v1/chat/completions', { 'x-proxy-token': ptok }, first, firstTail, BODY_BYTES, chunked)));
    await run(`proxy, models scope, model last (${chunked ? 'chunked' : 'content-length'})`, BUDGET_MB + 32, (port, ptok) =>
      eight(() => send(port, '/v1/proxy/v1/chat/completions', { 'x-proxy-token': ptok }, lastHead, lastTail, BODY_BYTES, chunked)));
  }
  // The control: a token with no scope streams every body straight through (no scan, nothing held).
  await run('proxy, no scope (control: plain streaming)', BUDGET_MB + 32, (port, ptok) =>
    eight(() => send(port, '/v1/proxy/v1/chat/completions', { 'x-proxy-token': ptok }, lastHead, lastTail, BODY_BYTES, false)), false);

  // Model first: does the provider see the body before the caller's last byte? The caller holds its tail until
  // the provider has bytes (or 10 s pass).
  let early: { seenBytes: number | undefined } = { seenBytes: undefined };
  await scenario(provider.port, async (port, ptok) => {
    const tag = 'early';
    const outcome = await send(port, '/v1/proxy/v1/chat/completions', { 'x-proxy-token': ptok, 'x-bench-tag': tag }, first, firstTail, 4 * MB, false, async () => {
      for (let i = 0; i < 1000 && !provider.firstBytes.has(tag); i++) await sleep(10);
      early = { seenBytes: provider.firstBytes.get(tag) };
    });
    return [outcome];
  });
  const forwardedEarly = early.seenBytes !== undefined;
  console.log(`\nmodel first, forwarded before the caller's last byte: ${forwardedEarly ? `yes (the provider had bytes while the caller still held its last ${firstTail.length})` : 'NO'}`);

  await provider.close();
  const over = rows.filter((r) => r.m.peakMb >= r.boundMb);
  if (over.length > 0 || !forwardedEarly) {
    console.log(`\nFAILED: ${over.map((r) => r.name).join(', ')}${forwardedEarly ? '' : ' (not forwarded early)'}`);
    process.exit(1);
  }
}

/** `npm run bench -- memory`. */
export const run = (): Promise<void> => main();
