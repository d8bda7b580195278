/**
 * The clients of Keyward's authorization server: who may ask for a code, and where it may be sent. A `client_id`
 * that is an https URL is a Client ID Metadata Document: fetched under the SSRF rules (public-address.ts: https,
 * public addresses, no redirect, 64 KiB, 5 s; loopback http only with KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK), its own
 * `client_id` equal to the URL, kept five minutes. Any other `client_id` is one registered here (RFC 7591,
 * `mcpc_…`). Every client is public (no secret: PKCE binds the code to its requester). A redirect URI is https, or
 * http on a loopback host (a native app's), or a private-use scheme (`cursor://…`); never with a fragment. A
 * request's `redirect_uri` must be one the client lists, exactly, except that a loopback one may name any port
 * (RFC 8252 §7.3).
 */
import { OAuthError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { McpClientRecord, McpGrantStore } from '../../store/ports.js';
import { OidcFetchError, DEFAULT_FETCH_LIMITS } from '../oidc-fetch.js';
import { fetchPublicJson } from '../public-address.js';

export interface McpClient {
  id: string;
  name: string;
  redirectUris: readonly string[];
  /** `document`: known by its metadata document's URL; `registered`: by dynamic registration. */
  kind: 'document' | 'registered';
}

/** Why a client or its redirect URI is refused: shown on an error page (never a redirect to an unchecked URI). */
export class ClientRefusal extends Error {}

const DOCUMENT_TTL_MS = 5 * 60_000;
const DOCUMENT_CACHE_MAX = 1000;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'about:', 'ftp:', 'ws:', 'wss:']);

/** A redirect URI a client may register, or the reason it may not. */
export function redirectUriProblem(raw: unknown): string | undefined {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 2000) return 'a redirect URI is a string of at most 2000 characters';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'a redirect URI is an absolute URL';
  }
  if (url.hash || raw.includes('#')) return 'a redirect URI has no fragment';
  if (url.username || url.password) return 'a redirect URI has no user or password';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? undefined : 'a redirect URI is https, or http on a loopback host';
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `a redirect URI may not use ${url.protocol}`;
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$|^[a-z][a-z0-9+-]{2,}:$/.test(url.protocol) ? undefined : 'a redirect URI has an unusable scheme';
}

/** Whether `asked` is one of `listed`: exactly, or a loopback URI that differs only in its port. */
export function redirectListed(listed: readonly string[], asked: string): boolean {
  if (listed.includes(asked)) return true;
  let a: URL;
  try {
    a = new URL(asked);
  } catch {
    return false;
  }
  if (a.protocol !== 'http:' || !LOOPBACK_HOSTS.has(a.hostname)) return false;
  return listed.some((l) => {
    const u = URL.parse(l);
    return u !== null && u.protocol === 'http:' && u.hostname === a.hostname && u.pathname === a.pathname && u.search === a.search;
  });
}

const isDocumentId = (id: string): boolean => id.startsWith('https://') || id.startsWith('http://');

export class McpClients {
  private readonly documents = new Map<string, { client: McpClient; until: number }>();

  constructor(
    private readonly store: Pick<McpGrantStore, 'createMcpClient' | 'getMcpClient'>,
    private readonly allowHttpLoopback: boolean,
    private readonly now: () => number,
  ) {}

  /** The client a `client_id` names, or a ClientRefusal saying why it cannot be used. */
  async resolve(clientId: unknown): Promise<McpClient> {
    if (typeof clientId !== 'string' || clientId.length === 0 || clientId.length > 2000) throw new ClientRefusal('The request names no client (`client_id`).');
    if (isDocumentId(clientId)) return this.document(clientId);
    const found = /^mcpc_[0-9A-Za-z]{24}$/.test(clientId) ? await this.store.getMcpClient(clientId) : undefined;
    if (!found) throw new ClientRefusal('No client is registered with this `client_id`.');
    return { id: found.id, name: found.name, redirectUris: found.redirectUris, kind: 'registered' };
  }

  /** RFC 7591: a public client with these redirect URIs (each checked), answered as the registration response. */
  async register(body: Record<string, unknown>): Promise<McpClientRecord> {
    const uris = body.redirect_uris;
    if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10) throw new OAuthError('invalid_redirect_uri', '`redirect_uris` must list one to ten redirect URIs.');
    for (const uri of uris) {
      const problem = redirectUriProblem(uri);
      if (problem) throw new OAuthError('invalid_redirect_uri', `${problem}.`);
    }
    const method = body.token_endpoint_auth_method;
    if (method !== undefined && method !== 'none') throw new OAuthError('invalid_client_metadata', 'Only public clients are registered: `token_endpoint_auth_method` must be "none" (PKCE binds the code to the client).');
    const types = body.grant_types;
    if (types !== undefined && (!Array.isArray(types) || types.some((g) => g !== 'authorization_code' && g !== 'refresh_token'))) {
      throw new OAuthError('invalid_client_metadata', '`grant_types` may hold only authorization_code and refresh_token.');
    }
    const name = typeof body.client_name === 'string' && body.client_name.trim() !== '' ? body.client_name.trim().slice(0, 100) : 'Unnamed MCP client';
    const record: McpClientRecord = { id: newId('mcpc'), name, redirectUris: uris as string[], createdAt: this.now() };
    await this.store.createMcpClient(record);
    return record;
  }

  private async document(url: string): Promise<McpClient> {
    const now = this.now();
    const cached = this.documents.get(url);
    if (cached && cached.until > now) return cached.client;
    let doc: Record<string, unknown>;
    try {
      const parsed = new URL(url);
      if (parsed.pathname === '/' || parsed.search || parsed.hash) throw new OidcFetchError('a client metadata document\'s URL has a path and no query or fragment');
      doc = await fetchPublicJson(url, { ...DEFAULT_FETCH_LIMITS, allowHttpLoopback: this.allowHttpLoopback });
    } catch (err) {
      throw new ClientRefusal(`The client's metadata document could not be used: ${err instanceof OidcFetchError ? err.message : 'not a URL'}.`);
    }
    if (doc.client_id !== url) throw new ClientRefusal('The client\'s metadata document names another `client_id` than its own URL.');
    const uris = doc.redirect_uris;
    if (!Array.isArray(uris) || uris.length === 0 || uris.some((u) => redirectUriProblem(u) !== undefined)) throw new ClientRefusal('The client\'s metadata document lists no usable `redirect_uris`.');
    if (doc.token_endpoint_auth_method !== undefined && doc.token_endpoint_auth_method !== 'none') throw new ClientRefusal('Only public clients may use a metadata document here (`token_endpoint_auth_method` "none").');
    const name = typeof doc.client_name === 'string' && doc.client_name.trim() !== '' ? doc.client_name.trim().slice(0, 100) : new URL(url).host;
    const client: McpClient = { id: url, name, redirectUris: uris as string[], kind: 'document' };
    if (this.documents.size >= DOCUMENT_CACHE_MAX) this.documents.delete(this.documents.keys().next().value!);
    this.documents.set(url, { client, until: now + DOCUMENT_TTL_MS });
    return client;
  }
}
