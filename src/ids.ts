/**
 * Identifiers and bearer tokens. Tokens follow GitHub's scheme: a prefix, 190
 * random bits in base62 and a CRC32 checksum in base62, so a leaked token can
 * be recognised offline and a typo rejected without a store lookup. Only the
 * SHA-256 of a token is ever stored.
 */
import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62 string of `length` characters (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += B62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

function base62Fixed(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = B62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export type IdPrefix = 'org' | 'cred' | 'tok' | 'otk' | 'evt' | 'req' | 'tp' | 'akey' | 'pool' | 'usr' | 'mcpc' | 'mcpg' | 'team';

let lastMs = 0;
let seq = 0;

/**
 * 9 base62 characters that increase with every id this process makes (the
 * millisecond × 1024 + a counter), so ids sort in creation order: lists ordered
 * by (created_at, id) are exactly newest first even within one millisecond.
 */
function orderedPrefix(): string {
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    seq = 0;
  } else if (++seq >= 1024) {
    lastMs++;
    seq = 0;
  }
  return base62Fixed(lastMs * 1024 + seq, 9);
}

/** `cred_` + 9 ordered characters + 15 random ones (89 bits): unguessable enough for an id, never a secret. */
export const newId = (prefix: IdPrefix): string => `${prefix}_${orderedPrefix()}${randomBase62(15)}`;
/**
 * An id that every instance derives alike from `material` (an aggregated audit
 * record's org, action, address and minute): 9 characters ordered by `ms`, as
 * newId's, then 15 base62 characters of SHA-256 over the material.
 */
export function derivedId(prefix: IdPrefix, ms: number, material: string): string {
  let n = BigInt('0x' + createHash('sha256').update(material).digest('hex'));
  let tail = '';
  for (let i = 0; i < 15; i++) {
    tail += B62[Number(n % 62n)];
    n /= 62n;
  }
  return `${prefix}_${base62Fixed(ms * 1024, 9)}${tail}`;
}

export const isId = (prefix: IdPrefix, value: string): boolean => new RegExp(`^${prefix}_[0-9A-Za-z]{24}$`).test(value);

export type TokenPrefix = 'ptok' | 'otok' | 'kses' | 'kref';
const BODY_LEN = 32; // 32 × log2(62) ≈ 190 bits
const CHECK_LEN = 6;

export function newToken(prefix: TokenPrefix): string {
  const body = randomBase62(BODY_LEN);
  return `${prefix}_${body}${base62Fixed(crc32(body), CHECK_LEN)}`;
}

/** Shape and checksum only; says nothing of whether the token exists. */
export function isWellFormedToken(prefix: TokenPrefix, value: string): boolean {
  if (value.length !== prefix.length + 1 + BODY_LEN + CHECK_LEN || !value.startsWith(`${prefix}_`)) return false;
  const rest = value.slice(prefix.length + 1);
  if (!/^[0-9A-Za-z]+$/.test(rest)) return false;
  const body = rest.slice(0, BODY_LEN);
  return base62Fixed(crc32(body), CHECK_LEN) === rest.slice(BODY_LEN);
}

/** One-shot `crypto.hash`: a token is hashed on every proxied request, and a Hash object per call costs ~4× as much. */
export const sha256Hex = (value: string): string => hash('sha256', value, 'hex');

/** Constant-time comparison of two secrets of any length (compares their digests). */
export function secretEquals(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}
