/**
 * The provider contract: what a provider file declares. A provider is one declarative object: the fields its
 * credentials carry (secret or plain), where its API lives (an origin, or a template filled from validated
 * plain fields), how a request authenticates upstream (a header, a query parameter, or a signer), where its
 * SDKs put a key, how its responses report usage, its allowed routes and its prices. Validated once at
 * start-up: a malformed file stops start-up naming the file and the field.
 *
 * A new way to authenticate is a Signer (a built-in one named by string, or an object the file brings); a new
 * usage shape is a UsageReaderFactory; a new realtime message protocol is a RealtimeProtocol (realtime.ts). None
 * needs a change to Keyward.
 */
import type { ApiVersion } from './version.js';
import type { BilledTool, ModelPrice, PriceDimension, TokenUsage } from './prices.js';
import type { RealtimeProtocol } from './realtime.js';

/** Header names (lower case) to values, as Node gives them. */
export type IncomingHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** PUT and PATCH are for tool APIs (GitHub's REST API updates with them); model APIs use the other three. */
export type HttpMethod = 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';

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
  /**
   * Parameters whose value is a cloud resource id: besides the usual characters they admit `:`
   * and `/` sent encoded as `%2F` (Bedrock's `anthropic.claude-…-v1:0` and inference-profile
   * ARNs). The value stays encoded upstream; a `model` parameter is scope-checked decoded.
   */
  resourceParams?: readonly string[];
  /**
   * A WebSocket route (`method` GET): reached only by an `Upgrade: websocket` request, relayed message by
   * message by the realtime relay, never by a plain request. `protocol` says how its messages are read
   * (responses, usage, the model); `modelQuery` names the query parameter that names the model
   * (OpenAI `model`, Azure `deployment`), checked against a token's `models` scope before the upgrade.
   */
  websocket?: WebSocketRoute;
}

/**
 * The built-in realtime protocols by name (each the same as the object `providers/lib/realtime/` exports; a name
 * is kept for providers written before protocols were declared as objects).
 */
export type RealtimeProtocolName = 'openai-realtime' | 'openai-responses' | 'gemini-live';

export interface WebSocketRoute {
  /** How the route's messages are read: a RealtimeProtocol (the provider's own, or a built-in one), or a built-in's name. */
  protocol: RealtimeProtocolName | RealtimeProtocol;
  modelQuery?: string;
  /**
   * The most tokens the provider bills for one second of input audio (a bound, not an average): how an appended
   * audio chunk is priced before it is forwarded when its session transcribes input audio
   * . Without it, transcription under a cap is refused (`price_unknown`).
   */
  inputAudioTokensPerSecond?: number;
}

/**
 * One field of a credential, as `POST /v1/credentials` takes it. Secret fields are sealed
 * together in the envelope and never returned; plain fields are stored in clear, returned
 * in the credential's view, and may be sent upstream (`header`) or fill the upstream
 * template. Every value is a string.
 */
export interface CredentialField {
  /** Sealed, never returned, masked wherever an upstream echoes it. */
  secret?: boolean;
  /** The secret whose last 4 characters make `key_hint` (one per provider). */
  main?: boolean;
  /** May be left out of `POST /v1/credentials`. */
  optional?: boolean;
  /**
   * What a value must match. Default: printable ASCII without spaces (and at least 8
   * characters for a secret). A field used in the `upstream` template must declare one
   * that is anchored (`^…$`) and refuses `/ @ : ? # %`, spaces and line breaks.
   */
  pattern?: RegExp;
  /** Default 4096 for a secret, 200 for a plain field. */
  maxLength?: number;
  /** A plain field sent upstream in this header, e.g. OpenAI's organization → `openai-organization`. The caller's copy never is. */
  header?: string;
  /** One line for the API document. */
  description?: string;
  /**
   * What a form calls the field, in plain words (`API key`, `AWS region`): at most 40 printable characters,
   * no backticks. Default: the name with spaces for `_`.
   */
  label?: string;
  /** One or two plain sentences under the form's field: where to find the value and what it looks like (at most 200 characters, no backticks). */
  help?: string;
  /**
   * A plain field that pins a route parameter of the same name: a request whose path has
   * `{<field>}` with another value is refused (403 path_not_allowed, nothing sent), e.g. a
   * Vertex path's `{project}` and `{location}` must be the credential's own.
   */
  pinsPath?: boolean;
  /**
   * A plain yes-flag (Vertex's `ambient`, the clouds' `federated`): its one value is the string "true", and a
   * JSON `true` is taken as it. Must be optional (leaving it out is the "no").
   */
  flag?: boolean;
  /**
   * A secret field whose value, in a federated credential, names who to act as instead of being a key (Vertex's
   * `service_account`: the JSON key, or with `federated` the email to impersonate): then it is kept plain and shown.
   */
  plainWhenFederated?: boolean;
}

/** A credential's values as the proxy uses them: sealed secret fields and plain fields, by name. */
export interface CredentialSecrets {
  readonly secrets: Readonly<Record<string, string>>;
  readonly plain: Readonly<Record<string, string>>;
  /**
   * Whose credential this is, when the proxy uses it (absent while a body is parsed): a federated credential's
   * signer signs Keyward's JWT for this organisation (`sub` org:<orgId>) and credential. `memberId`: the member
   * a per-member upstream OAuth credential acts for (absent: none).
   */
  readonly owner?: Readonly<{ orgId: string; credentialId: string; memberId?: string }>;
}

export interface CredentialSpec {
  /** By field name (lower-case letters, digits and `_`). Default: `{ api_key: { secret: true, main: true } }`. */
  fields: Readonly<Record<string, CredentialField>>;
  /**
   * A rule across fields, checked at create and rotate after each field passed its own
   * (e.g. Bedrock: either the AWS key pair or an API key). Returns the problem, or undefined.
   */
  check?(credential: CredentialSecrets): { field: string; message: string } | undefined;
}

/** The request a signer sees just before it goes upstream. Header names are lower-case. */
export interface OutgoingRequest {
  readonly method: string;
  /** The origin it goes to, e.g. `https://api.acme.example` (after the template or KEYWARD_UPSTREAM_<ID>). */
  readonly origin: string;
  /** The path as sent, base path included, starting with `/`. */
  readonly path: string;
  /** The query string as sent, without `?` (the caller's, key parameters removed). A signer may add to it. */
  query: string;
  /** The headers as sent, `host` included. A signer sets, replaces or removes its own. */
  readonly headers: Record<string, string | string[]>;
  /** The exact body bytes sent (with a matching content-length): present only for a signer that needs them. */
  readonly body?: Uint8Array;
}

/** Authenticates one upstream request from the credential's values. */
export interface Signer {
  /** True: the gateway reads the whole body first (bounded by KEYWARD_MAX_BODY and the buffer budget). */
  readonly needsBody: boolean;
  /** Throwing refuses the request (an ApiError as it is; anything else as 502 upstream_unreachable). */
  sign(request: OutgoingRequest, credential: CredentialSecrets): void | Promise<void>;
  /**
   * Further values to mask in this credential's responses besides its secret fields, asked per
   * response (e.g. a minted access token, or a private key inside a JSON secret).
   */
  masks?(credential: CredentialSecrets): readonly string[];
}

export type ProviderAuth =
  /** The secret in a header; `format` default: `Bearer <key>` for `authorization`, the bare key otherwise. */
  | { kind: 'header'; header: string; format?: (secret: string) => string; field?: string }
  /** The secret in a query parameter. */
  | { kind: 'query'; param: string; field?: string }
  /** A signer object the file brings, or the name of a built-in one with its options. */
  | { kind: 'signer'; signer: Signer | string; options?: Readonly<Record<string, unknown>> };

/**
 * Where a provider's SDKs put a key. The gateway accepts a proxy token there (besides
 * `X-Proxy-Token`) and strips every such header or parameter, whatever the provider.
 * `scheme`: the value is `<scheme> <key>`; `pattern`: its first group is the key.
 */
export type TokenPlacement = { header: string; scheme?: string; pattern?: RegExp } | { query: string };


/** Reads one response's usage from its bytes as they pass (after masking); never changes them. */
export interface UsageReader {
  scan(chunk: Uint8Array): void;
  /** Called once when the response is over (whole or cut): what was read, if anything. */
  end(): TokenUsage | undefined;
}

export interface UsageResponse {
  status: number;
  headers: IncomingHeaders;
  /** The provider path requested, without a leading slash. */
  path: string;
  /**
   * A stream of events (`text/event-stream`, AWS's event stream), whose usage is final only at its end-of-message
   * event; false for one JSON body (final when whole). Undefined: not known, read as a stream.
   */
  eventStream?: boolean;
  /**
   * Whether the end of message matters for this response: false when no reservation is settled against it (an
   * unbudgeted request), so a reader may skip looking for it. Undefined: it matters.
   */
  settles?: boolean;
}

/**
 * The built-in usage shapes: readers of JSON usage keys (in one body or in server-sent events), fast enough for
 * every chunk of every stream. `vertex`: Anthropic's shape on its publisher's models, OpenAI's on the
 * OpenAI-compatible endpoint, Gemini's otherwise. `bedrock`: Bedrock's JSON keys (Converse's and the
 * Anthropic-native ones of InvokeModel); the Bedrock provider brings its own reader that adds Bedrock's count
 * headers and AWS's binary event stream, built on this one.
 */
export type UsageShape = 'openai' | 'anthropic' | 'gemini' | 'bedrock' | 'vertex';

/**
 * What the host hands a usage reader factory with each response: the built-in shapes' readers, for a reader that
 * builds on one (a provider's own framing around JSON usage keys, as Bedrock's event stream is). Made once by the
 * host, never per response.
 */
export interface UsageReaders {
  /** A new reader of the built-in `shape` for this response. */
  shape(shape: UsageShape, response: UsageResponse): UsageReader;
}

/**
 * A provider's own usage reading: called once per response (before its first byte), returns the reader its bytes
 * pass through. Runs on every chunk: keep `scan` free of allocation where the chunk holds no usage. A throw, or a
 * reader that throws, disables the reading of that response (the bytes pass unchanged; the request is settled as
 * one whose usage is unknown).
 */
export type UsageReaderFactory = (response: UsageResponse, readers: UsageReaders) => UsageReader;


/**
 * How a provider's official SDKs (or a tool) reach it through Keyward: the environment variables to set, or
 * a snippet of code where they take no variable. Values are templates: `{proxy}` is the gateway's proxy base
 * URL (`https://<gateway>/v1/proxy`), `{token}` the proxy token, and `{<field>}` a plain credential field
 * (Bedrock's `{region}`). The console shows them after minting; 
 */
export interface SdkSetup {
  /** Who reads them, e.g. `OpenAI SDKs (Python, Node, …)`. */
  name: string;
  /** Variable name → value template, in the order to show them. */
  env?: Readonly<Record<string, string>>;
  /** A code snippet (template) for SDKs that take the token only in their options. */
  code?: string;
  /** One plain sentence more (what else the SDK needs). */
  note?: string;
}

/**
 * What a provider is: `llm` (a model API, the default), `tool` (an HTTP API an agent calls: GitHub's REST API,
 * a search API) or `mcp` (a remote MCP server over Streamable HTTP: its POST bodies are JSON-RPC, read for the
 * token's `tools` scope and counted per `tools/call`; ).
 */
export type ProviderKind = 'llm' | 'tool' | 'mcp';

export interface ProviderPlugin {
  /** The version of this contract the file is written against: `1`. A file without it, or with another, stops start-up. */
  apiVersion: ApiVersion;
  /** The credential's `provider` value, e.g. `anthropic`. */
  id: string;
  /**
   * A provider loaded from KEYWARD_PROVIDERS_DIR that takes the place of the built-in provider of this id (its own `id`
   * is then the same). Without it, a folder provider with a built-in's id stops start-up. Logged at start-up.
   */
  replaces?: string;
  /** Default `llm`. */
  kind?: ProviderKind;
  /** Human name for listings. */
  name?: string;
  /**
   * Origin (and optional base path) of the provider's API, https, e.g. `https://api.anthropic.com`;
   * or a template whose `{field}` parameters are plain fields with a strict `pattern`, e.g.
   * `https://{resource}.openai.azure.com`. KEYWARD_UPSTREAM_<ID> replaces the whole origin.
   */
  upstream: string;
  /** The credential's fields; default one secret `api_key`. */
  credential?: CredentialSpec;
  /** How a request authenticates upstream. */
  auth: ProviderAuth;
  /** Where the provider's SDKs put a key. Default: the `auth` header or parameter. */
  tokenIn?: readonly TokenPlacement[];
  /** How its responses report usage. Default `openai`. */
  usage?: UsageShape | UsageReaderFactory;
  /** Allowed method + path patterns, from the provider's API reference. (`allow`, the first name, is still read.) */
  routes: readonly ProviderRoute[];
  /** Defaults sent upstream unless the caller sets them, e.g. `anthropic-version`. */
  headers?: Readonly<Record<string, string>>;
  /**
   * Prices by model name or `prefix*` (exact names win, then the longest prefix), written inline: a folder
   * provider's alternative to a `<id>.prices.json` beside it (the built-in providers have theirs there). Both
   * pass one schema : each entry may also carry `aliases`, `as_of`, `source` and `note`.
   */
  prices?: Readonly<Record<string, ModelPrice & { aliases?: readonly string[]; as_of?: string; source?: string; note?: string }>>;
  /** The day `prices` were taken from the provider's price page, `YYYY-MM-DD`. Required with `prices`. */
  pricesAsOf?: string;
  /** The https URL `prices` were taken from. Required with `prices`. */
  pricesSource?: string;
  /** Tools it runs and bills on its side, by name (see BilledTool). */
  tools?: Readonly<Record<string, BilledTool>>;
  /** Every request field or mode that changes what it bills, by name (see PriceDimension). */
  priceDimensions?: Readonly<Record<string, PriceDimension>>;
  /** How its SDKs are pointed at Keyward (checked at load). */
  sdk?: readonly SdkSetup[];
  /**
   * An MCP server's Streamable HTTP endpoint, a path on its routes (e.g. `mcp/`): where Keyward's own MCP route for
   * a credential, `/v1/mcp/<credential id>`, goes. Default: its first POST route without parameters.
   */
  mcpEndpoint?: string;
}
