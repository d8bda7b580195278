/**
 * One process of the scale row (`npm run bench -- scale`): several whole gateway instances (the built server, each its own
 * container, Firestore client, lease keeper, usage recorder and listening port), as many instances share
 * a machine's cores. Started by ./index.ts with fork(); it says `{ ports }` once every instance
 * listens, and on `stop` shuts each down gracefully (drain, leases handed back, usage flushed), then says
 * `{ stopped: true }`.
 */
import { Writable } from 'node:stream';
import path from 'node:path';
import { ROOT } from '../../lib/servers.js';

interface Start {
  count: number;
  env: Record<string, string>;
}

const dist = (p: string) => import(path.join(ROOT, 'dist/src', p));

async function main(): Promise<void> {
  const start = await new Promise<Start>((resolve) => process.once('message', (m) => resolve(m as Start)));
  const [{ loadConfig }, { buildServer }, { createLogger }] = await Promise.all([dist('config.js'), dist('container.js'), dist('log.js')]);
  const quiet = new Writable({ write: (_c, _e, cb) => cb() });
  const servers: Array<{ shutdown(): Promise<void>; http: { listen(): Promise<{ port: number }> } }> = [];
  const ports: number[] = [];
  for (let i = 0; i < start.count; i++) {
    const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', ...start.env });
    const server = await buildServer(config, createLogger('error', quiet));
    ports.push((await server.http.listen()).port);
    servers.push(server);
  }
  process.send!({ ports });
  process.on('message', async (m) => {
    if ((m as { stop?: boolean }).stop) {
      await Promise.all(servers.map((s) => s.shutdown().catch(() => undefined)));
      process.send!({ stopped: true }, () => process.exit(0));
    }
  });
}

void main();
