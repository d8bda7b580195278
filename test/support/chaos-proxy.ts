/**
 * A switchable TCP proxy for store outages in tests (in front of the Firestore emulator): clients connect
 * to it as to the store. Modes, switchable at any time:
 *   pass       bytes flow both ways
 *   blackhole  connections stay open and silent: nothing flows, new ones are accepted and held; what was
 *              sent meanwhile is delivered when the mode goes back to pass (as TCP does after a partition)
 *   reset      every connection is reset (RST), new ones too
 *   latency    bytes flow after `latencyMs` each way, in order
 *   drop       new connections are closed at once, open ones are ended (the store going away cleanly)
 */
import net from 'node:net';

export type ChaosMode = 'pass' | 'blackhole' | 'reset' | 'latency' | 'drop';

export interface ChaosProxy {
  /** host:port to give clients. */
  readonly host: string;
  readonly mode: ChaosMode;
  set(mode: ChaosMode, latencyMs?: number): void;
  close(): Promise<void>;
}

interface Leg {
  from: net.Socket;
  to: net.Socket;
  /** Chunks held (blackhole) or waiting out their latency, in order. */
  held: Buffer[];
  timer: NodeJS.Timeout | undefined;
}

export async function startChaosProxy(target: { host: string; port: number }): Promise<ChaosProxy> {
  let mode: ChaosMode = 'pass';
  let latencyMs = 0;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; legs: Leg[] }>();
  /** Every socket accepted, to destroy on close (one ended by `drop` may linger half-open). */
  const sockets = new Set<net.Socket>();

  const pump = (leg: Leg) => {
    if (mode === 'blackhole' || leg.to.destroyed) return;
    if (mode === 'latency') {
      if (leg.timer || leg.held.length === 0) return;
      leg.timer = setTimeout(() => {
        leg.timer = undefined;
        const chunk = leg.held.shift();
        if (chunk && !leg.to.destroyed) leg.to.write(chunk);
        pump(leg);
      }, latencyMs);
      return;
    }
    while (leg.held.length > 0) leg.to.write(leg.held.shift()!);
  };

  const server = net.createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (mode === 'reset') return void client.resetAndDestroy();
    if (mode === 'drop') return void client.end();
    const upstream = net.connect(target.port, target.host);
    const legs: Leg[] = [{ from: client, to: upstream, held: [], timer: undefined }, { from: upstream, to: client, held: [], timer: undefined }];
    const pair = { client, upstream, legs };
    pairs.add(pair);
    for (const leg of legs) {
      leg.from.on('data', (chunk: Buffer) => {
        leg.held.push(chunk);
        pump(leg);
      });
    }
    const done = () => {
      pairs.delete(pair);
      for (const leg of legs) if (leg.timer) clearTimeout(leg.timer);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', done);
    upstream.on('close', done);
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as net.AddressInfo).port;

  return {
    host: `127.0.0.1:${port}`,
    get mode() {
      return mode;
    },
    set(next, ms = 0) {
      mode = next;
      latencyMs = ms;
      for (const pair of [...pairs]) {
        if (mode === 'reset') {
          pair.client.resetAndDestroy();
          pair.upstream.resetAndDestroy();
        } else if (mode === 'drop') {
          pair.client.end();
          pair.upstream.end();
        } else {
          for (const leg of pair.legs) pump(leg);
        }
      }
    },
    close: () => new Promise<void>((resolve) => {
      for (const pair of pairs) pair.upstream.destroy();
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
