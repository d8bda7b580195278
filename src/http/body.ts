/**
 * Reading an admin request's JSON body: refused by content-length before a
 * byte is read when too large, counted as it streams otherwise (and never read
 * further once past the limit), and checked for nesting depth before
 * JSON.parse (deep nesting is an attack, not a request).
 */
import type { IncomingMessage } from 'node:http';
import { Errors } from '../errors.js';

const MAX_DEPTH = 32;

export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  return parseJsonBody(await readRawBody(req, maxBytes));
}

/**
 * The body's bytes, refused with 413 past `maxBytes`: by content-length before a byte is read, else the
 * moment the count passes it. The rest is never read (nor drained): the caller answers with
 * `connection: close`, so a refused body costs no more than `maxBytes`.
 */
export function readRawBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) return Promise.reject(Errors.payloadTooLarge(maxBytes));
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    // One buffer the chunks are copied into: a body of a thousand tiny chunks keeps no thousand Buffer objects.
    let body = Buffer.allocUnsafe(Math.min(declared === undefined ? 16 * 1024 : Number(declared), maxBytes));
    let size = 0;
    const stop = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      if (size + chunk.length > maxBytes) {
        // Not a for-await loop: leaving one destroys the request, and the 413 could not be sent.
        stop();
        req.pause();
        reject(Errors.payloadTooLarge(maxBytes));
        return;
      }
      if (size + chunk.length > body.length) {
        const grown = Buffer.allocUnsafe(Math.min(maxBytes, Math.max(body.length * 2, size + chunk.length)));
        body.copy(grown, 0, 0, size);
        body = grown;
      }
      chunk.copy(body, size);
      size += chunk.length;
    };
    const onEnd = (): void => {
      stop();
      resolve(body.subarray(0, size));
    };
    const onError = (): void => {
      stop();
      reject(Errors.badRequest('The request body was not received whole.'));
    };
    const onClose = (): void => {
      if (!req.complete) onError();
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** JSON from body bytes: undefined when empty, 400 when invalid or nested too deep. */
export function parseJsonBody(raw: Buffer): unknown {
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  if (nestingDepth(text) > MAX_DEPTH) throw Errors.invalidRequest(`The JSON body is nested deeper than ${MAX_DEPTH} levels.`);
  try {
    return JSON.parse(text);
  } catch {
    throw Errors.invalidRequest('The request body is not valid JSON.');
  }
}

/** The deepest bracket nesting outside strings; linear, no recursion. */
export function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) max = depth;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return max;
}

/** Is the request's body a form (`application/x-www-form-urlencoded`, any parameters)? */
export function isFormBody(req: IncomingMessage): boolean {
  return /^application\/x-www-form-urlencoded\s*(;|$)/i.test(req.headers['content-type'] ?? '');
}

/** A form body's fields as an object of strings; undefined when empty; 400 for a field given twice (RFC 6749 §3.2 forbids it). */
export function parseFormBody(raw: Buffer): Record<string, string> | undefined {
  if (raw.length === 0) return undefined;
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of new URLSearchParams(raw.toString('utf8'))) {
    if (Object.hasOwn(out, name)) throw Errors.invalidRequest(`\`${name.slice(0, 64)}\` is given more than once.`, name.slice(0, 64));
    out[name] = value;
  }
  return { ...out };
}
