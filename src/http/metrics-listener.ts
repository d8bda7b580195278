/**
 * The loopback metrics listener (KEYWARD_METRICS_PORT): `GET /metrics` on 127.0.0.1 only, for a collector that runs
 * beside Keyward in the same network namespace (on Cloud Run, a sidecar container such as Google Cloud Managed Service
 * for Prometheus's, which scrapes without credentials). Nothing else is served on it, and nothing outside the instance
 * can reach it: Cloud Run routes requests only to the ingress container's `PORT`. It stays open while the main
 * listener drains (the collector's shut-down scrape), and closes after.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import http from '../node-http.js';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '../settings/config.js';
import { Errors } from '../errors.js';
import { sendError } from './reply.js';

export type MetricsHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export const METRICS_LOOPBACK_HOST = '127.0.0.1';

export class LoopbackMetricsListener {
  private readonly server: Server;

  constructor(private readonly port: number, handler: MetricsHandler, headersTimeoutMs: number) {
    this.server = http.createServer({ headersTimeout: headersTimeoutMs, requestTimeout: headersTimeoutMs, maxHeaderSize: 16 * 1024 }, (req, res) => {
      req.resume();
      const path = (req.url ?? '').split('?')[0];
      if (req.method !== 'GET' || path !== '/metrics') {
        sendError(res, Errors.notFound('Only GET /metrics is served on this port.'));
        return;
      }
      handler(req, res).catch(() => {
        if (!res.headersSent) sendError(res, Errors.internal());
        else res.destroy();
      });
    });
    this.server.on('clientError', (_err, socket) => socket.destroy());
  }

  /** Binds 127.0.0.1:port; a port in use or refused stops start-up naming KEYWARD_METRICS_PORT. */
  async listen(): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', (err: NodeJS.ErrnoException) => {
        reject(new ConfigError('KEYWARD_METRICS_PORT', `a free port on ${METRICS_LOOPBACK_HOST} (${err.code ?? err.message})`, String(this.port)));
      });
      this.server.listen(this.port, METRICS_LOOPBACK_HOST, () => resolve());
    });
    return this.server.address() as AddressInfo;
  }

  address(): AddressInfo | null {
    return this.server.address() as AddressInfo | null;
  }

  close(): void {
    this.server.close();
    this.server.closeAllConnections();
  }
}
