/**
 * The built image with an extension from a folder mounted into it, as an operator runs it
 * (`docker run -v ./examples/custom-usage:/extensions/custom-usage:ro -e KEYWARD_PROVIDERS_DIR=…`): the example
 * provider (erasable TypeScript, no build) loads beside the built-in ones from the read-only folder, and one request
 * through it reaches a stand-in upstream on loopback with the credential's key, and its usage and spend are read by
 * the reader the folder brings. SIGTERM then exits 0, and the key is in no log line.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { check, json, startServer, waitForLine, type BuiltStage } from './image.js';
import { say } from './sandbox.js';

/** The folder mounted (from the build context), where, and what it declares. */
const EXAMPLE = 'examples/custom-usage';
const MOUNTED_AT = '/extensions/custom-usage';
const KEY = 'mtr-replay-key-0123456789';
const METER = { in: 40_000, out: 10_000 };

export async function runWithMountedExample(image: BuiltStage, logDir: string, contextDir: string): Promise<void> {
  image.root.mountReadOnly(path.join(contextDir, EXAMPLE), MOUNTED_AT);
  const seen: { authorization?: string; path?: string }[] = [];
  const upstream = http.createServer((req, res) => {
    seen.push({ authorization: req.headers.authorization, path: req.url });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ text: 'read by the mounted reader', meter: METER }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const user = image.root.resolveUser(image.user);
  const adminToken = `replay-admin-token-${Math.random().toString(36).slice(2)}${Date.now()}`;
  const env = {
    HOME: user.home, ...image.env, HOST: '127.0.0.1', PORT: '0', KEYWARD_METRICS_PORT: '0', KEYWARD_ADMIN_TOKEN: adminToken,
    KEYWARD_PROVIDERS_DIR: MOUNTED_AT, KEYWARD_UPSTREAM_METERLY: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
  };
  say(`running the image with ${EXAMPLE} mounted read-only at ${MOUNTED_AT}`);
  const { server, lines, stderr, exited, exit, out } = startServer(image, env, path.join(logDir, 'server-mounted.out'));
  try {
    const listening = await waitForLine(lines, 'listening', exited, 15_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${stderr()}`);
    });
    const base = `http://127.0.0.1:${String(listening.port)}`;
    const admin = (token: string, body: unknown) => ({ method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const org = await json(await fetch(`${base}/v1/orgs`, admin(adminToken, { name: 'replay-mounted' })), 'POST /v1/orgs');
    const providers = await json(await fetch(`${base}/v1/providers`, { headers: { authorization: `Bearer ${String(org.token)}` } }), 'GET /v1/providers');
    const ids = (providers.data as { id: string }[]).map((p) => p.id);
    check(ids.includes('meterly') && ids.includes('openai') && ids.includes('bedrock'), `the mounted provider is not loaded beside the built-in ones (${ids.join(', ')})`);
    const cred = await json(await fetch(`${base}/v1/credentials`, admin(String(org.token), { provider: 'meterly', api_key: KEY })), 'POST /v1/credentials (meterly)');
    const minted = await json(await fetch(`${base}/v1/tokens`, admin(String(org.token), { credential_id: cred.id, ttl: '15m', budget_usd: '5.00' })), 'POST /v1/tokens');
    const answer = await fetch(`${base}/v1/proxy/v1/generate`, { method: 'POST', headers: { 'x-proxy-token': String(minted.token), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'meter-large', max_tokens: 100, prompt: 'hi' }) });
    check(answer.status === 200 && /read by the mounted reader/.test(await answer.text()), `the request through the mounted provider: ${answer.status}`);
    check(seen.length === 1 && seen[0]!.authorization === `Bearer ${KEY}` && seen[0]!.path === '/v1/generate', `the stand-in upstream saw ${JSON.stringify(seen.map((s) => s.path))}`);
    // Usage is written in the background: asked until it shows (40,000 in at $2/M + 10,000 out at $10/M = $0.18).
    const expected = { requests: 1, input_tokens: METER.in, output_tokens: METER.out, spend_usd: '0.18' };
    const deadline = Date.now() + 10_000;
    let usage: unknown;
    for (;;) {
      usage = (await json(await fetch(`${base}/v1/tokens/${String(minted.id)}`, { headers: { authorization: `Bearer ${String(org.token)}` } }), 'GET /v1/tokens/:id')).usage;
      if (JSON.stringify(usage) === JSON.stringify(expected) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    check(JSON.stringify(usage) === JSON.stringify(expected), `usage through the mounted reader: ${JSON.stringify(usage)}, expected ${JSON.stringify(expected)}`);
    server.kill('SIGTERM');
    const [code] = await exit;
    check(code === 0, `SIGTERM: exit ${code}, expected 0\n${stderr()}`);
    check(!lines.join('\n').includes(KEY) && !stderr().includes(KEY), 'the mounted provider\'s key appeared in the logs');
    say(`${EXAMPLE} mounted: loaded beside the built-ins, one request through it, usage and spend read by its own reader`);
  } finally {
    if (!exited()) server.kill('SIGKILL');
    out.end();
    upstream.close();
  }
}
