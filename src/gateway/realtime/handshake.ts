/**
 * The caller's side of a WebSocket handshake, before anything else runs: is it
 * one (RFC 6455 §4.2.1: GET, `Upgrade: websocket`, a 16-byte key, version 13),
 * which subprotocols it offers, and which of those carry a key (a browser's
 * `openai-insecure-api-key.<key>`: never offered upstream, never answered). A
 * handshake this gateway cannot answer is refused before anything else runs
 * (entry/gateway.ts: 400 in the contract's shape, the connection closed).
 *
 * The handshake itself (the accept hash, framing) is `ws`'s: this file only
 * decides, so a malformed handshake costs no admission and no upstream dial.
 */
import type { IncomingMessage } from 'node:http';
import type { TokenCarriers } from '../../catalog/registry.js';

/** `ws`'s own key check: base64 of 16 bytes. */
const KEY = /^[+/0-9A-Za-z]{22}==$/;
/** An RFC 7230 token: what a subprotocol name may be. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Why this is not a WebSocket handshake we can answer, or undefined when it is one. */
export function handshakeProblem(req: IncomingMessage): string | undefined {
  if (req.method !== 'GET') return 'A WebSocket handshake is a GET.';
  if (String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return 'The Upgrade header must be websocket.';
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string' || !KEY.test(key)) return 'Sec-WebSocket-Key is missing or malformed.';
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') return 'Sec-WebSocket-Version must be 13.';
  if (offeredProtocols(req) === undefined) return 'Sec-WebSocket-Protocol is malformed.';
  return undefined;
}

/** The subprotocols offered, in order ([] when none); undefined when the header is malformed or repeats one. */
export function offeredProtocols(req: IncomingMessage): string[] | undefined {
  const header = req.headers['sec-websocket-protocol'];
  if (header === undefined) return [];
  const names = header.split(',').map((p) => p.trim());
  if (names.some((p) => !TOKEN.test(p)) || new Set(names).size !== names.length) return undefined;
  return names;
}

/** Whether an offered subprotocol carries a key: one a provider names as a key carrier (its `tokenIn`), or anything holding a proxy token. */
export function carriesKey(protocol: string, carriers: TokenCarriers): boolean {
  if (protocol.includes('ptok_')) return true;
  for (const c of carriers.headers) {
    if (c.header === 'sec-websocket-protocol' && c.pattern?.test(protocol)) return true;
  }
  return false;
}
