/** Test support: a slow client on a raw socket, for the header and body deadlines (KEYWARD_HEADERS_TIMEOUT_MS, KEYWARD_BODY_TIMEOUT_MS). */
import net from 'node:net';
import { sleep } from './wait.js';

/** Writes `parts` with `gapMs` between them; resolves with what came back and when the server closed. */
export function trickle(port: number, parts: string[], gapMs: number): Promise<{ raw: string; closedAfterMs: number; sent: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let raw = '';
    let sent = 0;
    let closed = false;
    socket.on('data', (d) => (raw += d.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      resolve({ raw, closedAfterMs: Date.now() - started, sent });
    });
    socket.on('connect', async () => {
      for (const p of parts) {
        if (closed) return;
        socket.write(p);
        sent++;
        await sleep(gapMs);
      }
      // Everything sent and still open: give up waiting after a while.
      await sleep(3000);
      if (!closed) socket.destroy();
    });
  });
}
