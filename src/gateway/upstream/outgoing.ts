/**
 * The upstream request as a provider declares it, before the upstream leg
 * sends it: the origin (fixed, or the credential's from the template), the
 * clean path and query, the headers after hygiene, then the provider's signer.
 * A signer that needs the body gets the exact bytes that will be sent: the body
 * is read whole first, within KEYWARD_MAX_BODY (413) and the process-wide
 * buffer budget and the token's share of it (503 overloaded), and sent as those bytes with a matching
 * content-length. Per credential, the origin and the masks of its secrets are
 * worked out once and kept while the credential's values are cached.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { ApiError, Errors } from '../../errors.js';
import type { CredentialSecrets, OutgoingRequest, Signer } from '../../catalog/provider.js';
import type { Provider } from '../../catalog/registry.js';
import type { BufferBudget, BufferHolder } from '../entry/buffer-budget.js';
import { CHUNK_OVERHEAD } from '../wire/body-scan.js';

/** What a credential's values mean on the wire, worked out once per cached value. */
export interface CredentialWire {
  /** Origin and base path, without a trailing slash. */
  readonly target: URL;
  /** The target's origin, host and base path (`''` or `/v2`) as strings, read once: a URL's getters cost on every call. */
  readonly origin: string;
  readonly host: string;
  readonly basePath: string;
  /** Every secret, for masking header values and reason phrases. */
  readonly maskStrings: readonly string[];
  /** The same as bytes, for masking bodies. */
  readonly maskBytes: readonly Buffer[];
}

const wires = new WeakMap<CredentialSecrets, CredentialWire>();

/** Throws 503 unavailable when a stored plain value no longer fits the template (never sends it anywhere else). */
export function credentialWire(provider: Provider, credential: CredentialSecrets): CredentialWire {
  let wire = wires.get(credential);
  if (wire) return wire;
  let target = provider.target;
  if (!target) {
    if (!provider.template || provider.template.problem(credential.plain)) throw Errors.unavailable();
    target = provider.template.origin(credential.plain);
  }
  const maskStrings = Object.values(credential.secrets).filter((s) => s.length > 0);
  // No trailing slash: `${basePath}/${path}` is the path signed and the path sent (no `//` for a join to repair).
  const basePath = target.pathname.replace(/\/+$/, '');
  wire = Object.freeze({ target, origin: target.origin, host: target.host, basePath, maskStrings, maskBytes: maskStrings.map((s) => Buffer.from(s, 'utf8')) });
  wires.set(credential, wire);
  return wire;
}

/** The credential's masks plus what its signer masks now (a minted token): the wire's own when it adds none. */
export function withSignerMasks(wire: CredentialWire, extra: readonly string[] | undefined): Pick<CredentialWire, 'maskStrings' | 'maskBytes'> {
  if (!extra || extra.length === 0) return wire;
  const strings = extra.filter((s) => s.length > 0);
  return { maskStrings: [...wire.maskStrings, ...strings], maskBytes: [...wire.maskBytes, ...strings.map((s) => Buffer.from(s, 'utf8'))] };
}

/** The request a signer sees: `providerPath` without its leading slash, `query` without `?`. */
export function outgoingRequest(method: string, wire: CredentialWire, providerPath: string, query: string, headers: Record<string, string | string[]>): OutgoingRequest {
  headers.host = wire.host;
  return { method, origin: wire.origin, path: `${wire.basePath}/${providerPath}`, query, headers };
}

/** A body being read whole for a signer. */
export interface WholeBody {
  /** The bytes, or the refusal (413, 503, 400). */
  readonly done: Promise<Buffer>;
  /** Stops reading and gives back what it holds. Idempotent. */
  abort(): void;
  /** Gives back the budget held for the finished body (once it was handed on). Idempotent. */
  release(): void;
}

/**
 * Reads `source` (the request, or the scan that holds its start) whole. With a declared length the bytes go
 * into one buffer of that size, charged once; a chunked body's chunks are charged as they come, then swapped
 * for the one joined buffer.
 */
export function readWhole(source: Readable | IncomingMessage, declared: number | undefined, maxBody: number, budget: BufferBudget | undefined, holder?: BufferHolder): WholeBody {
  let charged = 0;
  let settled = false;
  const take = (bytes: number): boolean => {
    if (budget && !budget.take(bytes, holder)) return false;
    charged += bytes;
    return true;
  };
  const giveBack = (): void => {
    budget?.release(charged, holder);
    charged = 0;
  };
  let resolve!: (b: Buffer) => void;
  let reject!: (e: ApiError) => void;
  const done = new Promise<Buffer>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  done.catch(() => {});
  const detach = (): void => {
    source.off('data', onData);
    source.off('end', onEnd);
    source.off('error', onBroken);
    source.off('close', onClose);
  };
  const fail = (err: ApiError): void => {
    if (settled) return;
    settled = true;
    detach();
    giveBack();
    reject(err);
  };
  const fixed = declared !== undefined && Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined;
  if (fixed !== undefined && fixed > maxBody) fail(Errors.payloadTooLarge(maxBody));
  let one: Buffer | undefined;
  const chunks: Buffer[] = [];
  let total = 0;
  if (!settled && fixed !== undefined) {
    if (take(fixed + CHUNK_OVERHEAD)) one = Buffer.allocUnsafe(fixed);
    else fail(Errors.overloaded());
  }
  function onData(chunk: Buffer): void {
    total += chunk.length;
    if (total > maxBody || (one && total > one.length)) return fail(Errors.payloadTooLarge(maxBody));
    if (one) {
      chunk.copy(one, total - chunk.length);
    } else {
      if (!take(chunk.length + CHUNK_OVERHEAD)) return fail(Errors.overloaded());
      chunks.push(chunk);
    }
  }
  function onEnd(): void {
    if (settled) return;
    if (one && total !== one.length) return fail(Errors.badRequest('The request body was not received whole.'));
    let body = one ?? (chunks.length === 1 ? chunks[0]! : undefined);
    if (!body) {
      // The joined copy is charged before the chunks are given back: the sum held never passes the budget.
      const chunkCharge = charged;
      if (!take(total)) return fail(Errors.overloaded());
      body = Buffer.concat(chunks, total);
      budget?.release(chunkCharge, holder);
      charged -= chunkCharge;
    }
    chunks.length = 0;
    settled = true;
    detach();
    resolve(body);
  }
  /** The body broke, or a plugin's requestBody hook refused it (pipeline/body-hooks.ts): that refusal. */
  function onBroken(err?: unknown): void {
    fail(err instanceof ApiError ? err : Errors.badRequest('The request body was not received whole.'));
  }
  function onClose(): void {
    if (!settled && (source as IncomingMessage).complete === false) onBroken();
  }
  if (!settled) {
    source.on('data', onData);
    source.on('end', onEnd);
    source.on('error', onBroken);
    source.on('close', onClose);
  }
  return {
    done,
    abort: () => {
      if (!settled) fail(Errors.badRequest('The request was abandoned.'));
      giveBack();
    },
    release: giveBack,
  };
}

/**
 * Waits for the whole body, then signs: the signer sees the exact bytes, and content-length says how many
 * (`framed`: the caller sent a body, even an empty one). Returns the bytes to send; the query as signed is
 * written back to `request`.
 */
export async function signOverBody(signer: Signer, request: OutgoingRequest, credential: CredentialSecrets, whole: WholeBody, framed: boolean): Promise<Buffer> {
  const bytes = await whole.done;
  const signed: OutgoingRequest = { ...request, body: bytes };
  if (bytes.length > 0 || framed) signed.headers['content-length'] = String(bytes.length);
  await signer.sign(signed, credential);
  request.query = signed.query;
  return bytes;
}

/** Query characters a WHATWG URL leaves as they are: such a query is sent exactly as the signer saw it. */
const PLAIN_QUERY = /^[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*$/;

/**
 * The upstream request target: the path (base path included; its characters are all ones a URL leaves as
 * they are, normalisePath saw to that) and the query. A query with other characters (a space, quotes, `<>`,
 * `#`, non-ASCII) is normalised the way a URL serialises it, as http-proxy-3 did when it parsed every target.
 */
export function requestTarget(request: OutgoingRequest): string {
  if (!request.query) return request.path;
  if (PLAIN_QUERY.test(request.query)) return `${request.path}?${request.query}`;
  const url = new URL(`${request.path}?${request.query}`, 'http://base.invalid');
  return `${url.pathname}${url.search}`;
}

/**
 * A body read whole, as http-proxy-3's `buffer` option takes it: the library only calls `buffer.pipe(proxyReq)`
 * (passes/web-incoming.js), so the bytes go out with one `end()` and no stream between. Only for the upstream leg's send.
 */
export function wholeBody(bytes: Buffer): Readable {
  const pipe = <T extends NodeJS.WritableStream>(dest: T): T => {
    dest.end(bytes);
    return dest;
  };
  return { pipe } as unknown as Readable;
}
