/**
 * Who is asking: the client address of a request, and the bucket failed
 * authentications are counted under. The client address is the
 * X-Forwarded-For entry KEYWARD_TRUSTED_PROXIES places from the right (each
 * trusted proxy appends the address it saw, so entries left of that one are
 * whatever the client chose to send and are never trusted). With 0 the header
 * is ignored. Anything that is not an IP falls back to the socket's address,
 * so a malformed header can never name an arbitrary bucket.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

const MAPPED_V4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** `::ffff:203.0.113.7` → `203.0.113.7`: the same client whether it arrived over IPv4 or a dual-stack socket. */
export function normaliseAddress(address: string): string {
  return MAPPED_V4.exec(address)?.[1] ?? address;
}

/** The client address of `req` behind `trustedProxies` proxies that append to X-Forwarded-For. */
export function clientAddress(req: IncomingMessage, trustedProxies: number): string {
  const socket = normaliseAddress(req.socket.remoteAddress ?? '');
  if (trustedProxies <= 0) return socket;
  // Every header line, in order: a proxy may add its own line rather than extend the first.
  const lines = req.headersDistinct['x-forwarded-for'];
  if (!lines) return socket;
  const entries = lines.join(',').split(',').map((e) => e.trim());
  const entry = entries[Math.max(0, entries.length - trustedProxies)]!;
  return isIP(entry) ? normaliseAddress(entry) : socket;
}

/** The bucket an address is counted under: IPv6 by its /64 (one subscriber's whole network), IPv4 as itself. */
export function addressBucket(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = expandIpv6(address);
  return groups ? `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64` : address;
}

/** The eight 16-bit groups of an IPv6 address (zone id dropped, an IPv4 tail folded in); undefined if malformed. */
function expandIpv6(address: string): number[] | undefined {
  let text = address.split('%')[0]!;
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return undefined;
  const groups = [...head, ...Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}
