/**
 * What a provider declares about money: a model's prices as a price file writes them (USD per million
 * tokens; catalog/prices.ts turns them into integer micro-dollars once, at start) and the request fields or
 * modes that change what the provider bills (its price dimensions). Part of the provider contract
 * (provider.ts re-exports them).
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
   * 0.0001): realtime input-audio transcription (src/gateway/realtime/transcription.ts). Added to its token prices.
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
 * `keyward_unpriced_requests_total`. Checked at load (price-dimensions.ts).
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
