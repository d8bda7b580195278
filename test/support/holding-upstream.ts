/**
 * Test support: an OpenAI-shaped upstream for the `priced` provider that answers a JSON completion reporting
 * the request's worst case as its usage, or, with `x-hold`, a stream that sends its first chunk and then waits
 * until the caller goes away (a stream in flight when an instance is killed).
 */
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawnServer, type SpawnedServer } from './app.js';
import { startEmulator } from './firestore-emulator.js';
import { providersDir } from './providers-dir.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';

export interface HoldingUpstream {
  url: string;
  /** Answered requests, streams held open, and held streams the caller went away from. */
  seen: { answered: number; held: number; cut: number };
  close(): Promise<void>;
}

export async function startHoldingUpstream(): Promise<HoldingUpstream> {
  const seen = { answered: 0, held: 0, cut: 0 };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (req.headers['x-hold']) {
      seen.held++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'pm-1', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`);
      res.on('close', () => seen.cut++);
      return;
    }
    seen.answered++;
    const usage = { prompt_tokens: Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS, completion_tokens: JSON.parse(body).max_tokens };
    const text = JSON.stringify({ id: 'c', object: 'chat.completion', model: 'pm-1', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

/**
 * Three gateway processes on one fresh Firestore project of the emulator, sharing one key, their `priced`
 * provider pointed at a holding upstream and their leases lasting `ttlMs`: the set-up of the tests that kill
 * one of them mid-stream.
 */
export async function startHoldingCluster(t: ExecutionContext, name: string, ttlMs: number) {
  const emulator = await startEmulator(t);
  const up = await startHoldingUpstream();
  t.teardown(() => up.close());
  const project = `keyward-${name}-${randomBytes(4).toString('hex')}`;
  const env = {
    KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: project,
    KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'), KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']),
    KEYWARD_UPSTREAM_PRICED: up.url, KEYWARD_LEASE_TTL: `${ttlMs / 1000}s`,
  };
  const servers = await Promise.all([0, 1, 2].map(() => spawnServer(t, env, 30_000))) as [SpawnedServer, SpawnedServer, SpawnedServer];
  return { emulator, up, project, servers };
}
