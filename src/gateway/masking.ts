/**
 * Masks the stored key where an upstream echoes it: its exact bytes become `*`
 * of the same length (so content-length stays true), across chunk edges. Only
 * the longest chunk tail that could begin the key is held back (usually
 * nothing), so streamed events are never delayed.
 */
const STAR = 0x2a;

/** The masking state of one response, without stream machinery (the upstream leg's relay calls it per chunk). */
export class StreamMasker {
  private carry: Buffer | undefined;

  constructor(private readonly key: Buffer) {}

  /** What can be sent now, masked; undefined when everything is held back for the next chunk. */
  push(chunk: Buffer): Buffer | undefined {
    let data = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = undefined;
    data = maskAll(data, this.key);
    const hold = partialKeyAtEnd(data, this.key);
    if (hold > 0) {
      this.carry = Buffer.from(data.subarray(data.length - hold));
      data = data.subarray(0, data.length - hold);
    }
    return data.length > 0 ? data : undefined;
  }

  /** What was held back, at the end of the body. */
  end(): Buffer | undefined {
    const rest = this.carry;
    this.carry = undefined;
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

export function maskString(value: string, key: string): string {
  return value.includes(key) ? value.split(key).join('*'.repeat(key.length)) : value;
}
