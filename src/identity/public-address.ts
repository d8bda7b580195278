/**
 * Outbound fetches to addresses someone else names (a client metadata document's URL): the SSRF rules of
 * oidc-fetch.ts (https only; plain http solely on loopback with KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK; no redirect;
 * a bounded body and time) plus public addresses only. The host name is resolved once and every address it
 * resolves to must be public (not private, loopback, link-local, carrier-grade NAT, multicast, reserved, nor an
 * IPv4 address mapped into IPv6); the connection is made to the address that was checked (the request's own
 * `lookup`), so a name that resolves elsewhere a moment later (DNS rebinding) changes nothing. Loopback is allowed
 * only with the test setting, and then only loopback.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { fetchableUrl, OidcFetchError, type FetchLimits } from './oidc-fetch.js';

const notPublic = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24],
  ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 3],
] as const) notPublic.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 127], ['::ffff:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['2002::', 16],
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) notPublic.addSubnet(net, bits, 'ipv6');
const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

const family = (address: string): 'ipv4' | 'ipv6' => (isIP(address) === 6 ? 'ipv6' : 'ipv4');

/** Whether an address may be connected to: public, or loopback when the test setting allows it. */
export function addressAllowed(address: string, allowLoopback: boolean): boolean {
  if (isIP(address) === 0) return false;
  if (allowLoopback && loopback.check(address, family(address))) return true;
  return !notPublic.check(address, family(address));
}

/** A `lookup` that resolves every address of the name and refuses the whole name if any one is not allowed. */
function checkedLookup(allowLoopback: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const refused = addresses.find((a) => !addressAllowed(a.address, allowLoopback));
      if (addresses.length === 0 || refused) return callback(new OidcFetchError(`refused to connect to ${hostname}: not a public address`), '', 0);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** GETs a JSON object from a public https URL under `limits` (or an OidcFetchError saying why not, never a token). */
export async function fetchPublicJson(raw: string, limits: FetchLimits): Promise<Record<string, unknown>> {
  const url = fetchableUrl(raw, limits.allowHttpLoopback);
  const where = `${url.origin}${url.pathname}`;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // An address literal is never looked up: checked here.
  if (isIP(host) !== 0 && !addressAllowed(host, limits.allowHttpLoopback)) throw new OidcFetchError(`refused to fetch ${where}: not a public address`);
  const body = await new Promise<Buffer>((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(url, { method: 'GET', headers: { accept: 'application/json' }, lookup: checkedLookup(limits.allowHttpLoopback), timeout: limits.timeoutMs, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new OidcFetchError(`${where}: status ${res.statusCode}`));
      }
      if (Number(res.headers['content-length'] ?? '0') > limits.maxBytes) {
        res.destroy();
        return reject(new OidcFetchError(`${where}: larger than ${limits.maxBytes} bytes`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > limits.maxBytes) {
          res.destroy();
          reject(new OidcFetchError(`${where}: larger than ${limits.maxBytes} bytes`));
        } else chunks.push(chunk);
      });
      res.on('end', () => resolve(Buffer.concat(chunks)));
      res.on('error', () => reject(new OidcFetchError(`${where}: the body was cut off`)));
    });
    const deadline = setTimeout(() => req.destroy(new OidcFetchError(`${where}: no answer in time`)), limits.timeoutMs);
    deadline.unref();
    req.on('close', () => clearTimeout(deadline));
    req.on('timeout', () => req.destroy(new OidcFetchError(`${where}: no answer in time`)));
    req.on('error', (err) => reject(err instanceof OidcFetchError ? err : (err as { cause?: unknown }).cause instanceof OidcFetchError ? (err as { cause: OidcFetchError }).cause : new OidcFetchError(`${where}: ${/not a public address/.test(String(err)) ? 'not a public address' : 'unreachable'}`, { cause: err })));
    req.end();
  });
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new OidcFetchError(`${where}: not JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new OidcFetchError(`${where}: not a JSON object`);
  return value as Record<string, unknown>;
}
