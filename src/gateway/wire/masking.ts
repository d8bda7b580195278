/**
 * Masks a credential's secrets where an upstream echoes them: the exact bytes of
 * every secret field become `*` of the same length (so content-length stays
 * true), across chunk edges. Only the longest chunk tail that could begin one of
 * them is held back (usually nothing), so streamed events are never delayed.
 */
const STAR = 0x2a;

/**
 * The masking state of one response, without stream machinery (the upstream leg's relay calls it per chunk).
 * Occurrences are found in the bytes as the upstream sent them, for every secret at once, so secrets that
 * overlap (one's end is another's start) are each masked whole.
 */
export class StreamMasker {
  /** Held-back bytes, as the upstream sent them. */
  private carry: Buffer | undefined;
  /** How many bytes at the start of `carry` end an occurrence already found: masked whatever follows. */
  private owed = 0;
  private readonly keys: readonly Buffer[];

  /** `keys`: every secret's bytes (empty ones are ignored). */
  constructor(keys: Buffer | readonly Buffer[]) {
    this.keys = (Buffer.isBuffer(keys) ? [keys] : keys).filter((k) => k.length > 0);
  }

  /** What can be sent now, masked; undefined when everything is held back for the next chunk. */
  push(chunk: Buffer): Buffer | undefined {
    const data = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    let out: Buffer | undefined;
    let maskedTo = 0;
    if (this.owed > 0) {
      // Never write into a buffer someone else may still hold.
      out = Buffer.from(data);
      out.fill(STAR, 0, this.owed);
      maskedTo = this.owed;
    }
    let hold = 0;
    for (const key of this.keys) {
      for (let at = data.indexOf(key); at !== -1; at = data.indexOf(key, at + 1)) {
        out ??= Buffer.from(data);
        out.fill(STAR, at, at + key.length);
        maskedTo = Math.max(maskedTo, at + key.length);
      }
      hold = Math.max(hold, partialKeyAtEnd(data, key));
    }
    const send = data.length - hold;
    this.carry = hold > 0 ? Buffer.from(data.subarray(send)) : undefined;
    this.owed = Math.max(0, maskedTo - send);
    // The usual chunk (no key, nothing held) goes on as it came: no view made per event.
    if (send === 0) return undefined;
    const masked = out ?? data;
    return send === masked.length ? masked : masked.subarray(0, send);
  }

  /** What was held back, at the end of the body. */
  end(): Buffer | undefined {
    const rest = this.carry;
    if (rest && this.owed > 0) rest.fill(STAR, 0, this.owed);
    this.carry = undefined;
    this.owed = 0;
    return rest;
  }
}

/** Replaces every occurrence of `key` in `data` with stars (in place when it can). */
export function maskAll(data: Buffer, key: Buffer): Buffer {
  let at = data.indexOf(key);
  if (at === -1) return data;
  // Never write into a buffer someone else may still hold.
  const out = Buffer.from(data);
  while (at !== -1) {
    out.fill(STAR, at, at + key.length);
    at = out.indexOf(key, at + key.length);
  }
  return out;
}

/** Length of the longest tail of `data` that is a proper prefix of `key`. */
export function partialKeyAtEnd(data: Buffer, key: Buffer): number {
  const first = key[0];
  // Byte by byte, without a subarray per candidate: this runs on every chunk of every response.
  for (let i = Math.max(0, data.length - key.length + 1); i < data.length; i++) {
    if (data[i] !== first) continue;
    let j = 1;
    while (i + j < data.length && data[i + j] === key[j]) j++;
    if (i + j === data.length) return data.length - i;
  }
  return 0;
}

/** `value` with every occurrence of each key (or of the one key) replaced by stars, found in the original text. */
export function maskString(value: string, keys: string | readonly string[]): string {
  let chars: string[] | undefined;
  for (const key of typeof keys === 'string' ? [keys] : keys) {
    if (key === '') continue;
    for (let at = value.indexOf(key); at !== -1; at = value.indexOf(key, at + 1)) {
      // UTF-16 code units, as indexOf counts them.
      chars ??= value.split('');
      for (let i = at; i < at + key.length; i++) chars[i] = '*';
    }
  }
  return chars ? chars.join('') : value;
}
