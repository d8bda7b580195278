/**
 * Slow clients: headers or a body trickled past KEYWARD_HEADERS_TIMEOUT_MS /
 * KEYWARD_BODY_TIMEOUT_MS are cut off (and a half-sent proxied body aborts the
 * upstream); a client that reads a huge stream slowly, or stops reading, holds
 * the upstream back through backpressure: the gateway's memory stays bounded
 * and the upstream never gets to write it all.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, createCredential, createOrg, mintToken, spawnServer, tempDir } from '../support/app.js';
import { adversary, canary, leakForms, NO_ABUSE_LIMITS } from './_harness.js';
import { eventually, quiet } from '../support/wait.js';
import { trickle } from '../support/trickle.js';
import { sleep } from '../support/wait.js';

test('headers trickled past KEYWARD_HEADERS_TIMEOUT_MS → the connection is closed (408 JSON at most), on admin and proxy paths', async (t) => {
  const a = await adversary(t, { env: { KEYWARD_HEADERS_TIMEOUT_MS: '400', KEYWARD_BODY_TIMEOUT_MS: '5000' } });
  for (const target of ['GET /v1/credentials', 'GET /v1/proxy/v1/models', 'GET /healthz']) {
    const head = `${target} HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${a.tokens.openai.token}\r\nX-Padding: ${'p'.repeat(800)}\r\n\r\n`;
    const parts = head.match(/[\s\S]{1,4}/g)!; // ~240 pieces, 100 ms apart: 24 s if allowed to finish
    const r = await trickle(a.app.port, parts, 100);
    // Node's own deadline against a real socket: cut long before the trickle could end, bounded generously (a busy
    // machine is slow), however late its pauses make each piece.
    t.true(r.closedAfterMs < 15_000, `${target}: closed after ${r.closedAfterMs} ms`);
    t.true(r.sent < parts.length, `${target}: cut off before the headers were complete (${r.sent}/${parts.length})`);
    if (r.raw) t.regex(r.raw, /^HTTP\/1\.1 408 [\s\S]*"code":"request_timeout"/, target);
  }
  t.is(a.fake.received.length, 0);
  // A normal request is unaffected.
  t.is((await fetch(`${a.app.url}/healthz`)).status, 200);
  a.assertNoLeaks(t);
});

test('a body trickled past KEYWARD_BODY_TIMEOUT_MS → closed; a proxied one aborts the upstream, which never sees a complete body', async (t) => {
  // Headers have as long as the body (each head is sent whole): a busy machine's pause must not cut the checks' own requests.
  const a = await adversary(t, { env: { KEYWARD_HEADERS_TIMEOUT_MS: '800', KEYWARD_BODY_TIMEOUT_MS: '800' } });
  const body = JSON.stringify({ model: 'm', messages: [], pad: 'x'.repeat(1000) });
  const cases = [
    `POST /v1/credentials HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.org.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    `POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${a.tokens.openai.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    `POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${a.tokens.openai.token}\r\nTransfer-Encoding: chunked\r\n\r\n`,
  ];
  for (const head of cases) {
    const chunked = head.includes('chunked');
    const pieces = body.match(/[\s\S]{1,5}/g)!.map((p) => (chunked ? `${p.length.toString(16)}\r\n${p}\r\n` : p));
    const r = await trickle(a.app.port, [head, ...pieces, chunked ? '0\r\n\r\n' : ''], 100); // ~21 s if allowed
    const label = head.split('\r\n')[0]! + (chunked ? ' chunked' : '');
    // Cut long before the trickle could end; the real deadline's speed is bounded generously (a busy machine is slow).
    t.true(r.closedAfterMs < 15_000, `${label}: closed after ${r.closedAfterMs} ms`);
    t.true(r.sent < pieces.length, `${label}: cut off mid-body (${r.sent}/${pieces.length + 2})`);
  }
  // Whatever reached the upstream never completed (the gateway has closed every request, its upstream legs cut).
  await quiet(a.app);
  t.is(a.fake.received.length, 0, 'the fake records only complete bodies: none arrived');
  const list = await fetch(`${a.app.url}/v1/credentials`, { headers: { authorization: `Bearer ${a.org.token}` } });
  t.is(((await list.json()) as any).data.length, 3, 'the trickled credential was never stored');
  a.assertNoLeaks(t);
});

/** VmRSS of a process, in bytes. */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

test('a slow-reading client of a 200 MB stream: backpressure reaches the upstream; the gateway process stays small', async (t) => {
  // The upstream writes as fast as the socket lets it, honouring write() === false.
  const TOTAL = 200 * 1024 * 1024;
  const chunk = Buffer.alloc(64 * 1024, 'a');
  let written = 0;
  let blocked = 0;
  let finished = false;
  let upstreamClosed = false;
  const upstream = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const pump = () => {
      while (written < TOTAL) {
        written += chunk.length;
        if (!res.write(chunk)) {
          blocked++;
          res.once('drain', pump);
          return;
        }
      }
      res.end(() => (finished = true));
    };
    res.once('close', () => (upstreamClosed = true));
    pump();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    upstream.closeAllConnections();
    upstream.close(() => r());
  }));
  const key = canary('stream');
  const server = await spawnServer(t, {
    ...NO_ABUSE_LIMITS,
    KEYWARD_DATA_DIR: tempDir(t),
    KEYWARD_LOCAL_KEK: Buffer.alloc(32, 7).toString('base64'),
    KEYWARD_LOG_LEVEL: 'debug',
    KEYWARD_UPSTREAM_OPENAI: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
  });
  const org = await createOrg(server.url);
  const cred = await createCredential(server.url, org, 'openai', key);
  const tok = await mintToken(server.url, org, cred, '1h');
  // Warm up, so the baseline includes the code paths and buffers a stream uses.
  t.is((await api(server.url, 'GET', '/healthz')).status, 200);
  const baseline = rss(server.proc.pid!);

  let received = 0;
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.request(`${server.url}/v1/proxy/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'x-proxy-token': tok.token, 'content-type': 'application/json' } }, resolve);
    req.on('error', reject);
    req.end('{"model":"m","stream":true}');
  });
  t.is(res.statusCode, 200);
  // Read the first megabyte, then stop reading for a while.
  let paused!: () => void;
  const pausedNow = new Promise<void>((r) => (paused = r));
  res.on('data', (d: Buffer) => {
    received += d.length;
    if (received >= 1024 * 1024 && !res.isPaused()) {
      res.pause();
      paused();
    }
  });
  res.on('error', () => {});
  await pausedNow;
  const peaks: number[] = [];
  for (let i = 0; i < 12; i++) {
    await sleep(150); // pacing: the server's RSS sampled over time
    peaks.push(rss(server.proc.pid!));
  }
  const writtenWhilePaused = written;
  t.true(blocked > 0, 'the upstream saw write() return false');
  t.false(finished, 'the upstream could not finish');
  // In flight: socket buffers on both legs plus the gateway's stream buffers; nothing like 200 MB.
  t.true(writtenWhilePaused - received < 32 * 1024 * 1024, `the upstream got ${(writtenWhilePaused / 1048576).toFixed(1)} MB out while the client read ${(received / 1048576).toFixed(1)} MB`);
  await sleep(300); // a span in which nothing may move: what is measured is that nothing happens
  t.true(written - writtenWhilePaused < 1024 * 1024, 'once the pipes were full, nothing more moved');
  // Then a slow reader: a little at a time.
  for (let i = 0; i < 10; i++) {
    res.resume(); // pacing: a slow reader, reading a fifth of the time
    await sleep(20);
    res.pause();
    await sleep(80);
    peaks.push(rss(server.proc.pid!));
  }
  t.false(finished);
  const growth = Math.max(...peaks) - baseline;
  t.log(`upstream wrote ${(written / 1048576).toFixed(1)} MB, client read ${(received / 1048576).toFixed(1)} MB, gateway RSS ${Math.round(baseline / 1048576)} → ${Math.round(Math.max(...peaks) / 1048576)} MB`);
  t.true(growth < 80 * 1024 * 1024, `gateway RSS grew by ${Math.round(growth / 1048576)} MB (baseline ${Math.round(baseline / 1048576)} MB)`);
  t.true(received < TOTAL / 2);
  // The caller leaves: the upstream is aborted, the gateway lives and logs no secret.
  res.destroy();
  await eventually(() => upstreamClosed, 'the upstream closed').catch(() => undefined);
  t.true(upstreamClosed, 'the upstream response was closed when the caller left');
  t.false(finished);
  t.is((await api(server.url, 'GET', '/healthz')).status, 200);
  const logs = server.lines.join('\n');
  for (const form of leakForms(key)) t.false(logs.includes(form));
  t.false(logs.includes(tok.token));
  t.false(logs.includes(org.token));
});
