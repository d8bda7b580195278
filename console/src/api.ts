/**
 * The console's only way to the gateway: the public admin API, same origin, either with the signed-in
 * key as `Authorization: Bearer` (no cookie sent: credentials 'omit') or, signed in by single sign-on,
 * with the session cookie (HttpOnly: the page never sees it) and the session's anti-CSRF value as
 * `X-Keyward-CSRF` on every call. Nothing is cached. A refusal becomes an ApiFailure with the API's code, message and `param` (the field at
 * fault); errors.ts turns it into plain words for the page. The shapes below are the API's own
 * (see /v1/openapi.json); only the fields the console reads.
 */

export class ApiFailure extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly param?: string) {
    super(message);
    this.name = 'ApiFailure';
  }
}

export interface ListOf<T> {
  data: T[];
  has_more: boolean;
}

export interface UsageCounts {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  spend_usd?: string;
}

export interface Credential {
  id: string;
  provider: string;
  name?: string;
  key_hint: string;
  created_at: string;
  updated_at: string;
  usage?: UsageCounts;
  [plain: string]: unknown;
}

/** A token's caps as its refusals read them: `limit − used − held` is what a new request can still get. */
export interface TokenCaps {
  budget_usd?: { used: string; held: string; limit: string };
  tokens_per_minute?: { used_in_window: number; held: number; limit: number };
  max_requests?: { used: number; held: number; limit: number };
}

export interface Token {
  id: string;
  credential_id: string;
  name?: string;
  status: 'active' | 'expired' | 'revoked';
  created_at: string;
  expires_at: string;
  revoked_at?: string;
  revoked_by?: string;
  models?: string[];
  paths?: string[];
  max_requests?: number;
  rate_limit?: number;
  budget_usd?: string;
  tools?: string[];
  tokens_per_minute?: number;
  max_concurrent?: number;
  usage?: UsageCounts;
  /** On GET /v1/tokens/:id: each cap from the ledger its refusals use. */
  caps?: TokenCaps;
  /** Only in the mint response, once. */
  token?: string;
}

export interface CredentialField {
  name: string;
  secret: boolean;
  optional: boolean;
  pattern: string;
  rule: string;
  max_length: number;
  description: string;
  /** Plain words for a form (older gateways: absent, the name is shown instead). */
  label?: string;
  help?: string;
  /** A yes-flag (`federated`, `ambient`): a checkbox whose ticked value is "true" (older gateways: absent). */
  flag?: boolean;
}

/** How one SDK reaches a provider through the gateway: templates with {proxy}, {token} and plain fields. */
export interface SdkSetup {
  name: string;
  env?: Record<string, string>;
  code?: string;
  note?: string;
}

export interface Provider {
  id: string;
  name: string;
  /** `llm` (a model API), `tool` (an HTTP API such as GitHub's) or `mcp` (a remote MCP server). */
  kind?: 'llm' | 'tool' | 'mcp';
  credential_fields: CredentialField[];
  sdk?: SdkSetup[];
}

/** One row of GET /v1/usage/breakdown: a token, credential or model over the range. */
export interface BreakdownRow {
  key: string;
  name?: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  spend_usd: string;
}

export interface Breakdown {
  by: 'token' | 'credential' | 'model' | 'team' | 'member';
  from: string;
  to: string;
  data: BreakdownRow[];
}

export interface UsageSummary {
  period: string;
  proxy_requests: { used: number; held?: number; limit: number };
  credentials: { used: number; limit: number };
  tokens: { input: number; output: number };
  spend_usd?: { used: string; held?: string; limit: string | null };
}

export interface DailyUsage {
  date: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  spend_usd: string;
}

export interface AuditEvent {
  id: string;
  time: string;
  actor: string;
  actor_name?: string;
  action: string;
  target: string;
  target_name?: string;
  outcome: string;
  ip: string;
  count?: number;
}

/** `member`: a person signed in by single sign-on whose groups map to no admin role (its own session only). */
export type Role = 'owner' | 'admin' | 'minter' | 'viewer' | 'member';

export interface AdminKey {
  id: string;
  name?: string;
  role: Exclude<Role, 'owner' | 'member'>;
  credential_ids?: string[];
  status: 'active' | 'expired';
  created_at: string;
  expires_at: string | null;
  created_by: string;
  /** Only in the create response, once. */
  token?: string;
}

export interface TrustPolicy {
  id: string;
  issuer: string;
  audience: string;
  subject: string;
  claims: Record<string, string | number | boolean>;
  credential_id: string;
  ttl: string;
  created_at: string;
  expires_at?: string;
  models?: string[];
  max_requests?: number;
  budget_usd?: string;
}

export interface OrgSelf {
  id: string;
  name: string;
  created_at: string;
  spend_limit_usd?: string | null;
  caller?: { id?: string; role?: Role; credential_ids?: string[] };
  /** What to put in a cloud's trust policy (gateways that are an OIDC issuer). */
  federation?: { issuer: string; subject: string };
}

export interface Caller {
  role: Role;
  id?: string;
  credentialIds?: string[];
  orgName?: string;
  /** A member signed in by single sign-on: its e-mail address. */
  email?: string;
}

/** How calls are signed: a pasted key, or the single sign-on session's cookie with its anti-CSRF value. */
export type Credentials = string | { csrf: string };

/** GET /v1/session: who is signed in by single sign-on, and the anti-CSRF value of the cookie's session. */
export interface SignedInSession {
  org: { id: string; name: string };
  member: { id: string; email: string | null; name: string | null; role: Role };
  csrf?: string;
  expires_at: string;
}

/** What GET /v1/sso/provider says of an organisation that signs in by single sign-on. */
export interface SsoProvider {
  provider: string;
}

/** A fresh Idempotency-Key per submitted form: a double submit never creates twice. */
export function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export class Api {
  constructor(private readonly credentials: Credentials, private readonly onUnauthenticated: (message: string) => void = () => {}) {}

  /** Signed in by single sign-on (the cookie), not by a pasted key. */
  get bySession(): boolean {
    return typeof this.credentials !== 'string';
  }

  async call<T>(method: string, path: string, body?: unknown, idempotent = false): Promise<T> {
    const c = this.credentials;
    const headers: Record<string, string> = { accept: 'application/json', ...(typeof c === 'string' ? { authorization: `Bearer ${c}` } : { 'x-keyward-csrf': c.csrf }) };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (idempotent) headers['idempotency-key'] = idempotencyKey();
    let res: Response;
    try {
      res = await fetch(path, {
        method, headers, cache: 'no-store', credentials: typeof c === 'string' ? 'omit' : 'same-origin', referrerPolicy: 'no-referrer', redirect: 'error',
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch {
      throw new ApiFailure(0, 'network', 'The gateway could not be reached.');
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const error = (parsed as { error?: { code?: unknown; message?: unknown; param?: unknown } } | undefined)?.error;
      const failure = new ApiFailure(res.status, typeof error?.code === 'string' ? error.code : 'http_error',
        typeof error?.message === 'string' ? error.message : `The gateway answered ${res.status}.`, typeof error?.param === 'string' ? error.param : undefined);
      if (res.status === 401) this.onUnauthenticated(failure.message);
      throw failure;
    }
    return parsed as T;
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('POST', path, body, true);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PATCH', path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.call<T>('DELETE', path);
  }

  /** The single sign-on session this browser holds (its cookie), or undefined when it holds none. */
  static async session(): Promise<SignedInSession | undefined> {
    try {
      return await new Api({ csrf: '' }).get<SignedInSession>('/v1/session');
    } catch (err) {
      if (err instanceof ApiFailure && (err.status === 401 || err.status === 404)) return undefined;
      throw err;
    }
  }

  /** Whether an organisation (id or name) signs in by single sign-on, and with what; undefined when it does not. */
  static async ssoProvider(org: string): Promise<SsoProvider | undefined> {
    try {
      return await new Api({ csrf: '' }).get<SsoProvider>(`/v1/sso/provider?org=${encodeURIComponent(org)}`);
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 404) return undefined;
      throw err;
    }
  }

  /**
   * Who the key is: GET /v1/orgs/self's `caller` (role and, for a minter, its credentials). A gateway
   * without that route has only organisation tokens, which are owners: the key is checked with a
   * read every key may make, and treated as the owner's.
   */
  async whoami(): Promise<Caller> {
    try {
      const self = await this.get<OrgSelf>('/v1/orgs/self');
      const c = self.caller;
      return {
        role: c?.role ?? 'owner',
        ...(c?.id ? { id: c.id } : {}),
        ...(c?.credential_ids ? { credentialIds: c.credential_ids } : {}),
        ...(self.name ? { orgName: self.name } : {}),
      };
    } catch (err) {
      // Every role may read it; a key refused there can only be a key limited to minting.
      if (err instanceof ApiFailure && err.status === 403) return { role: 'minter' };
      if (!(err instanceof ApiFailure) || err.status !== 404) throw err;
      await this.get('/v1/tokens?limit=1');
      return { role: 'owner' };
    }
  }
}
