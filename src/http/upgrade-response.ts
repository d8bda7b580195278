/**
 * The response of an HTTP/1.1 upgrade the server handed over (its `upgrade`
 * event: Node answers nothing more on that socket). Until the upgrade is
 * accepted, whatever the caller is answered with (a refusal in the contract's
 * shape, a provider's own refusal passed back) is an ordinary ServerResponse
 * written on the socket, after which the connection closes, as Node's server
 * does after a `Connection: close` response: the socket is detached and ended,
 * and the response emits `close` on the next tick. The socket closing first
 * (the caller left) closes the response too (`destroyed`), so the request's
 * exit sees the caller gone the same way over every transport. An accepted
 * upgrade takes the socket back untouched (`releaseUpgrade`) for the
 * WebSocket server to write its 101 on.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import http from '../node-http.js';

/** A response on the upgrade's socket; the connection closes once it is written. */
export function upgradeResponse(req: IncomingMessage, socket: Duplex): ServerResponse {
  const res = new http.ServerResponse(req);
  res.assignSocket(socket as Socket);
  res.shouldKeepAlive = false;
  res.once('finish', () => {
    // Released to an accepted upgrade meanwhile: the socket is not this response's to end.
    if (res.socket !== socket) return;
    res.detachSocket(socket as Socket);
    socket.end();
    process.nextTick(() => res.emit('close'));
  });
  return res;
}

/** The upgrade is accepted: the socket leaves the response (nothing was written on it) for the WebSocket server. */
export function releaseUpgrade(res: ServerResponse, socket: Duplex): void {
  if (res.socket === socket) res.detachSocket(socket as Socket);
}
