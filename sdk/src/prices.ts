/**
 * What a provider declares about money: a model's prices as a price file writes them (USD per million
 * tokens; the core turns them into integer micro-dollars once, at start), the request fields or modes that
 * change what the provider bills (its price dimensions), the tools it bills on its side, and one response's
 * token counts as a usage reader reports them.
 */
/** A model's prices, for a model name or a `prefix*`. */
export interface ModelPrice {
  input: number;
  output: number;
  /** Input tokens read from the provider's cache. Default: `input`. */
  cachedInput?: number;
  /** Input tokens written to the provider's cache (Anthropic's cache_creation; its 5-minute writes). Default: `input`. */
  cacheWriteInput?: number;
  /**
   * Input tokens written to the cache for an hour (Anthropic's `ephemeral_1h_input_tokens`, Bedrock's `ttl: "1h"`
   * writes): twice the input price on Anthropic's page. No default: a model without it cannot price such writes,
   * and a request that reports some is settled at no less than its reservation.
   */
  cacheWrite1hInput?: number;
  /** The model's largest output in tokens, where the provider publishes it: the reservation's output bound when a request names none. */
  maxOutput?: number;
  /** The model's context window in tokens, where published: no request's input can be larger. */
  contextWindow?: number;
  /** USD per request on top of its tokens (Perplexity's search fee). */
  requestFee?: number;
  /**
   * Prices that apply to the WHOLE request when its input (every input token, cached included) passes
   * `aboveInputTokens`: Anthropic's long-context and Gemini Pro's over-200k prices. Unset cache prices default
   * to this tier's `input`.
   */
  longContext?: LongContextPrice;
  /**
   * A realtime or audio model's audio token prices (OpenAI bills audio apart from text; Gemini Live bills
   * audio, image and video input apart). Unset: audio tokens cost what text tokens cost.
   */
  audio?: AudioPrice;
  /**
   * USD per second of input audio, for a model billed by its audio's duration (whisper-1's $0.006 a minute is
   * 0.0001): realtime input-audio transcription (realtime input-audio transcription). Added to its token prices.
   */
  perAudioSecond?: number;
  /**
   * The model's prices in a tier a price dimension selects (PriceDimension: OpenAI's `service_tier: "flex"`,
   * Anthropic's fast mode), by tier name: every token price times `multiplier` (Flex at 0.5, fast mode at its
   * premium), or prices of their own (a per-model Priority price). A tier the model does not list has no price.
   */
  tiers?: Readonly<Record<string, TierPrice>>;
}

/** A tier's prices: a multiple of the model's own, or its own token prices (long-context ones too where the model has them). */
export type TierPrice =
  | { multiplier: number }
  | { input: number; output: number; cachedInput?: number; cacheWriteInput?: number; cacheWrite1hInput?: number; longContext?: LongContextPrice };

export interface AudioPrice {
  input: number;
  output: number;
  /** Default: `input`. */
  cachedInput?: number;
}

export interface LongContextPrice {
  aboveInputTokens: number;
  input: number;
  output: number;
  cachedInput?: number;
  cacheWriteInput?: number;
  cacheWrite1hInput?: number;
}

/**
 * A request field or mode that changes what the provider bills (OpenAI's `service_tier`, Anthropic's fast mode
 * and US-only inference, audio output, a batch or transcription route). It selects a price tier: `standard` is
 * the model's own prices, `audio` its audio prices (ModelPrice.audio), any other name the model's `tiers[name]`.
 * Under a cap (a token's `budget_usd` or `tokens_per_minute`, the organisation's `spend_limit_usd`) a request
 * whose dimension selects a tier its model does not price is refused (400 `price_unknown`); a priced tier is
 * reserved and settled at its prices. Without a cap it is forwarded and counted in
 * `keyward_unpriced_requests_total`. Checked at load.
 */
export interface PriceDimension {
  /** The body field that sets it (dotted: `generationConfig.responseModalities`), read by the body scan under a cap. */
  readonly field?: string;
  /** Or: the routes (`METHOD path` as in `routes`) that are this mode as a whole (a batch, a transcription). */
  readonly routes?: readonly string[];
  /** The field's value → the tier it selects. A value not listed (an object, an array, a string not named) has no price. */
  readonly values?: Readonly<Record<string, string>>;
  /** The tier any value selects (the field present, not null or false; every request of `routes`). */
  readonly present?: string;
  /**
   * The key the provider's response reports the value that served it under (OpenAI's `service_tier`, Anthropic's
   * `usage.speed`), read by the usage reader and looked up in `values`: a request is settled at the dearer of the
   * tier it asked for and the one it was served at (a project's default tier), never lower.
   */
  readonly reported?: string;
  /** Priced by another declaration (listed so every dimension is in one place): provider-side `tools`, `longContext`. */
  readonly pricedBy?: 'tools' | 'longContext';
  /** What it is, in a line. */
  readonly description?: string;
}

/**
 * One response's token counts. `inputTokens` is every input token, cached ones included (OpenAI's and
 * Gemini's prompt counts already are; the Anthropic-shaped readers add cache reads and writes to
 * `input_tokens`), so a price is applied as: cached at `cachedInput`, cache writes at `cacheWriteInput`,
 * the rest at `input`.
 */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the provider's cache (priced lower); part of `inputTokens`. */
  cachedInputTokens?: number;
  /** Input tokens written to the provider's cache (Anthropic's cache_creation_input_tokens); part of `inputTokens`. */
  cacheWriteInputTokens?: number;
  /** The part of `cacheWriteInputTokens` kept for an hour (Anthropic's `ephemeral_1h_input_tokens`), priced at `cacheWrite1hInput`. */
  cacheWrite1hInputTokens?: number;
  /**
   * Set by a reader at `end`: the response said the message ended (Anthropic's `message_delta` with a
   * `stop_reason` or `message_stop`, OpenAI's last chunk with `usage` or `response.completed`, Gemini's chunk with
   * a `finishReason`, Bedrock's `metadata` frame), read whole, so these counts are final. Without it a stream's
   * counts are charged no less than its reservation ; a complete JSON body is final either way.
   */
  final?: boolean;
  /** Audio (and, for Gemini Live, image and video) input tokens, priced at the model's `audio` prices; part of `inputTokens`. */
  audioInputTokens?: number;
  /** The cached share of `audioInputTokens` (part of `cachedInputTokens` too). */
  cachedAudioInputTokens?: number;
  /** Audio output tokens, priced at the model's `audio.output`; part of `outputTokens`. */
  audioOutputTokens?: number;
  /**
   * What the response says served the request, by the key a price dimension names in `reported` (OpenAI's
   * `service_tier`, Anthropic's `speed`): the request is settled at the dearer of that tier and the one it asked for.
   */
  reported?: Record<string, string>;
  /**
   * Token counts the response reported that the reader does not know (a key ending in `_tokens`, `Tokens` or
   * `TokenCount` that its shape neither prices nor knows to be part of another count): under a cap the request is
   * settled at no less than its reservation (fail closed), and each is counted in keyward_unknown_usage_total.
   */
  unknownFields?: string[];
}

/**
 * A tool the provider runs on its own side and bills beyond the request's visible input: web search, page
 * fetch, code execution, file search, MCP connectors. Their results come back as input tokens the body does not
 * show, and some cost per use. Under a spend budget a request that uses one is reserved at the model's context
 * window for input plus `perUse` times the most uses it can make; one with no such bound is refused (400
 * `tools_unbounded`). Checked at load.
 */
export interface BilledTool {
  /**
   * How a body asks for it (any one): the `type` of an element of its top-level `tools` array (exact, or a
   * `prefix*` such as `web_search_*`), a key of such an element (Gemini's `googleSearch`), or a top-level field
   * that is present and not null or false (`web_search_options`, `mcp_servers`).
   */
  readonly match: { readonly toolType?: readonly string[]; readonly toolKey?: readonly string[]; readonly field?: readonly string[] };
  /** USD per use beyond tokens (a search call). Omitted: tokens only. */
  readonly perUse?: number;
  /**
   * The most uses one request can bill (required with `perUse`): a number in the tool's own element (`max_uses`,
   * per element naming it), a top-level number field (`max_tool_calls`), or a fixed count per request. A body
   * that does not give the number is refused under a budget (`tools_unbounded`).
   */
  readonly uses?: { readonly toolField: string } | { readonly field: string } | { readonly perRequest: number };
  /** Billed by what no request field bounds (container time, generated images): refused under a budget. */
  readonly unbounded?: boolean;
  /**
   * Only for these models (names or `prefix*`): a declaration with `models` that names the request's model wins
   * over one without for the same tool. Default: every model.
   */
  readonly models?: readonly string[];
}
