/**
 * The provider contract: what a provider file (providers/*.ts) declares. A provider is
 * one declarative object: its upstream, how the key travels, its allowed routes and the
 * fields its credentials carry. Validated once at start by the registry (registry.ts).
 */

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

export interface ProviderRoute {
  method: HttpMethod;
  /**
   * The provider's own path without a leading slash; `{name}` matches one path
   * segment (letters, digits, `._~-`), e.g. `v1beta/models/{model}:generateContent`.
   * A `{model}` parameter is what a token's `models` scope is checked against;
   * otherwise the JSON body's `model` field is.
   */
  path: string;
  /**
   * The route reads or changes what the whole provider account shares (batches, files,
   * stored responses, fine-tunes, vector stores, balance or key info): every holder of the
   * same key sees it. A token reaches it only if its `paths` scope names the route's
   * pattern (or one concrete path of it) exactly; unscoped, model-scoped and `prefix*`
   * tokens get 403 path_not_allowed.
   */
  account?: boolean;
}

/**
 * A field of a credential besides `api_key`, declared by the provider. Plain fields only
 * for now: stored in clear with the record, returned in its view, validated (printable
 * ASCII, no spaces, at most 200 characters), and sent upstream in `header`, such as
 * OpenAI's `organization` → `openai-organization`. The caller can never set that header.
 */
export interface CredentialField {
  /** The field's name in `POST /v1/credentials` and the credential's view, e.g. `organization`. */
  name: string;
  kind: 'plain';
  /** The upstream header the value is sent in. */
  header: string;
  /** One line for the OpenAPI document. */
  description?: string;
}

export interface ProviderPlugin {
  /** The credential's `provider` value, e.g. `anthropic`. */
  id: string;
  /** Human name for listings. */
  name?: string;
  /** Origin (and optional base path) of the provider's API, e.g. `https://api.anthropic.com`. */
  upstream: string;
  /** Header that carries the key upstream, e.g. `x-api-key`. */
  keyHeader: string;
  /** Formats the key for `keyHeader`; default `Bearer <key>` for `authorization`, the bare key otherwise. */
  formatKey?: (key: string) => string;
  /** Defaults sent upstream unless the caller sets them, e.g. `anthropic-version`. */
  headers?: Record<string, string>;
  /** Query parameters that carry a key on this provider's API (Gemini's `key`): stripped, and accepted as the proxy token. */
  keyQueryParams?: string[];
  /** Allowed method + path patterns, from the provider's API reference. */
  allow: ProviderRoute[];
  /** Fields a credential of this provider may carry besides `api_key`. */
  credentialFields?: CredentialField[];
}
