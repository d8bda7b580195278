/**
 * The upstream leg of a session: a `ws` client to the provider, built from the
 * provider's declaration like any proxied request (outgoing.ts: the origin,
 * the clean path and query, header hygiene, then the provider's signer, which
 * puts the stored key or a minted token in). The caller's own WebSocket
 * headers (key, version, extensions, protocol), its Origin and every key
 * carrier are never sent; the subprotocols offered are the caller's minus any
 * that carries a key. The handshake is bounded by
 * KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS; redirects are never followed; messages
 * are bounded by KEYWARD_WS_MAX_MESSAGE; no compression (every message is
 * read in the clear for masking and usage, and deflate costs ~300 KB a socket).
 *
 * Outcomes: an open socket (with the subprotocol the provider chose and its
 * response headers, masked), the provider's own refusal (status, headers and
 * at most 64 KiB of body, masked, passed back to the caller as it answered), or
 * 502 upstream_unreachable / 504 upstream_timeout.
 */
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { ApiError, Errors } from '../../errors.js';
import type { CredentialSecrets, Signer } from '../../catalog/provider.js';
import type { Provider, ProviderRegistry } from '../../catalog/registry.js';
import { maskAll, maskString } from '../wire/masking.js';
import { credentialWire, outgoingRequest, requestTarget, withSignerMasks } from '../upstream/outgoing.js';
import { downstreamHeaders, stripKeyParams, upstreamHeaders } from '../upstream/headers.js';

/** What the caller's handshake carries that the upstream one never does (ws sets its own). */
const HANDSHAKE_ONLY = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions', 'sec-websocket-protocol', 'sec-websocket-accept', 'origin', 'host', 'content-length', 'accept-encoding'];
/** The provider's answer headers that describe its own handshake: the caller's is ws's. */
const ANSWER_ONLY = /^(sec-websocket-|content-length$|content-type$)/i;
/** How much of a refused handshake's body is passed back. */
const REFUSAL_BODY_MAX = 64 * 1024;

export interface DialRequest {
  provider: Provider;
  providers: ProviderRegistry;
  credential: CredentialSecrets;
  signer: Signer;
  /** The provider path (normalised, no leading slash) and the caller's query (key parameters still in it). */
  path: string;
  query: string;
  /** The caller's handshake request. */
  req: IncomingMessage;
  /** Subprotocols to offer the provider (key carriers already removed). */
  protocols: readonly string[];
  connectTimeoutMs: number;
  maxMessage: number;
}

export interface Dialed {
  socket: WebSocket;
  /** The subprotocol the provider chose ('' for none). */
  protocol: string;
  /** The provider's handshake response headers worth passing on (raw pairs, masked). */
  headers: string[];
  /** Every secret of the credential, and what its signer minted, as bytes: server messages are masked for them. */
  masks: readonly Buffer[];
}

/** The provider answered the handshake with an HTTP response instead of switching protocols. */
export class UpstreamRefusal extends Error {
  constructor(readonly status: number, readonly headers: string[], readonly body: Buffer) {
    super(`upstream refused the WebSocket handshake with ${status}`);
  }
}

export async function dialUpstream(d: DialRequest): Promise<Dialed> {
  const wire = credentialWire(d.provider, d.credential);
  const headers = upstreamHeaders(d.req.headers, d.provider, d.providers, d.credential.plain);
  for (const h of HANDSHAKE_ONLY) delete headers[h];
  const request = outgoingRequest('GET', wire, d.path, stripKeyParams(d.query, d.providers.keyQueryParams), headers);
  // The signer may mint a token (a promise); a signer that wants a body has none to see here.
  await d.signer.sign(request, d.credential);
  delete request.headers.host; // ws sets Host from the URL, which is the same origin
  const masks = withSignerMasks(wire, d.signer.masks?.(d.credential));
  const origin = wire.origin.replace(/^http/, 'ws');
  const url = `${origin}${requestTarget(request)}`;
  return new Promise<Dialed>((resolve, reject) => {
    let settled = false;
    const socket = new WebSocket(url, [...d.protocols], {
      headers: request.headers as Record<string, string>,
      handshakeTimeout: d.connectTimeoutMs,
      maxPayload: d.maxMessage,
      perMessageDeflate: false,
      followRedirects: false,
    });
    const fail = (err: ApiError | UpstreamRefusal): void => {
      if (settled) return;
      settled = true;
      socket.removeAllListeners();
      socket.on('error', () => {});
      socket.terminate();
      reject(err);
    };
    socket.once('upgrade', (res: IncomingMessage) => {
      const kept: string[] = [];
      const raw = downstreamHeaders(res.rawHeaders, (v) => maskString(v, masks.maskStrings));
      for (let i = 0; i < raw.length; i += 2) if (!ANSWER_ONLY.test(raw[i]!)) kept.push(raw[i]!, raw[i + 1]!);
      socket.once('open', () => {
        if (settled) return;
        settled = true;
        // Nothing is read until the caller's side is open too (the session resumes it): no message is lost.
        socket.pause();
        socket.removeAllListeners('error');
        socket.on('error', () => {});
        resolve({ socket, protocol: socket.protocol, headers: kept, masks: masks.maskBytes });
      });
    });
    socket.once('unexpected-response', (_req, res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < REFUSAL_BODY_MAX) chunks.push(c.subarray(0, REFUSAL_BODY_MAX - size));
        size += c.length;
      });
      const done = (): void => {
        let body: Buffer = Buffer.concat(chunks);
        for (const m of masks.maskBytes) body = maskAll(body, m);
        const kept: string[] = [];
        const raw = downstreamHeaders(res.rawHeaders, (v) => maskString(v, masks.maskStrings));
        for (let i = 0; i < raw.length; i += 2) if (!/^content-length$/i.test(raw[i]!)) kept.push(raw[i]!, raw[i + 1]!);
        const status = res.statusCode ?? 502;
        fail(status >= 200 && status <= 599 && status !== 101 ? new UpstreamRefusal(status, kept, body) : Errors.upstreamUnreachable());
      };
      res.once('end', done);
      res.once('error', done);
      res.once('close', done);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      const timedOut = /timed out/i.test(err.message) || err.code === 'ETIMEDOUT';
      fail(timedOut ? Errors.upstreamTimeout() : Errors.upstreamUnreachable());
    });
  });
}
