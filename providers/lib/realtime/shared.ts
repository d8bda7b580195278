/**
 * What the built-in realtime protocols share (written against @keyward/sdk alone, as any provider's own
 * protocol is): verdicts, reading a provider message only when it may matter, JSON field readers, and OpenAI's
 * error event.
 *
 * Server messages are parsed only when they may matter: a message that holds none of the protocol's marker
 * strings (`"response.done"` …, quotes included, which no JSON string value can hold unescaped) is relayed
 * unread. Audio deltas, most of the traffic, cost one byte search per marker.
 */
import { randomBytes } from 'node:crypto';
import type { GatewayError, RealtimeVerdict } from '@keyward/sdk';

export const FORWARD: RealtimeVerdict = Object.freeze({ kind: 'forward' });

/** Forwarded once `held` resolves; its refusal ends the session (1008). */
export const forwardOrClose = (held: Promise<void>, eventId?: string): Promise<RealtimeVerdict> =>
  held.then(() => FORWARD, (err: GatewayError) => ({ kind: 'close', code: 1008, error: err, ...(eventId !== undefined ? { eventId } : {}) }));

/** Forwarded once `held` resolves; its refusal is answered with an error event (the session goes on). */
export const forwardOrRefuse = (held: Promise<void>, eventId?: string): Promise<RealtimeVerdict> =>
  held.then(() => FORWARD, (err: GatewayError) => ({ kind: 'refuse', error: err, ...(eventId !== undefined ? { eventId } : {}) }));

/** Marker strings as bytes, made once per protocol. */
export const markers = (...names: string[]): readonly Buffer[] => names.map((n) => Buffer.from(`"${n}"`));

/** Whether a provider message (a Buffer, as the host hands it: RealtimeSessionProtocol.fromServer) holds one of `list`. */
export function hasMarker(raw: Uint8Array, list: readonly Buffer[]): boolean {
  const buf = raw as Buffer;
  for (const m of list) if (buf.indexOf(m) !== -1) return true;
  return false;
}

/** A provider message worth reading (it holds one of `list`'s markers) as a JSON object, else undefined. */
export function readMarked(raw: Uint8Array, list: readonly Buffer[]): Record<string, unknown> | undefined {
  return hasMarker(raw, list) ? parseObject(raw) : undefined;
}

/** A provider message as a JSON object, or undefined (it is relayed as it is either way). */
export function parseObject(raw: Uint8Array): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse((raw as Buffer).toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export const objectOf = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
export const stringOf = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A token count as providers write it: a whole number ≥ 0. */
export const countOf = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined);

/** An output cap: a count, `"inf"` (the model's largest output: undefined here), or absent (no change: null). */
export function capOf(v: unknown): number | undefined | null {
  if (v === undefined) return null;
  if (v === 'inf') return undefined;
  const n = countOf(v);
  return n === undefined ? null : n;
}

/**
 * OpenAI's error event (the Realtime and Responses WebSocket APIs' shape), with the refused client event's id:
 * `{"type":"error","event_id":…,"error":{"type","code","message","param":null,"event_id"}}`.
 */
export function openaiErrorEvent(err: GatewayError, eventId: string | undefined): string {
  return JSON.stringify({
    type: 'error',
    event_id: `event_kw${randomBytes(9).toString('base64url')}`,
    error: { type: err.type, code: err.code, message: err.message, param: null, event_id: eventId ?? null, ...(err.detail ? { detail: err.detail } : {}) },
  });
}
