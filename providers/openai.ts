// OpenAI: https://platform.openai.com/docs/api-reference. SDK base URL: <gateway>/v1/proxy/v1
import type { ModelPrice, ProviderPlugin } from '../src/catalog/provider.js';

/** GPT-6's published limits: a 1.05M-token context (922k of it input) and 128k output. */
const limits = { maxOutput: 128_000, contextWindow: 1_050_000 } as const;
/** A GPT-6-era price: cache writes billed, and a request past 272k input tokens billed whole at 2x input and cache, 1.5x output. */
function gpt6(input: number, cachedInput: number, cacheWriteInput: number | undefined, output: number, limit: Partial<typeof limits> = {}): ModelPrice {
  const write = cacheWriteInput === undefined ? {} : { cacheWriteInput };
  return {
    input, cachedInput, ...write, output, ...limit,
    longContext: { aboveInputTokens: 272_000, input: input * 2, cachedInput: cachedInput * 2, ...(cacheWriteInput === undefined ? {} : { cacheWriteInput: cacheWriteInput * 2 }), output: output * 1.5 },
  };
}

// Realtime list prices (USD per million tokens, text and audio apart) from https://platform.openai.com/docs/pricing,
// limits from each model's page, as of 2025-11-13 (`pricesAsOf`).
const realtime = {
  gptRealtime: { input: 4, cachedInput: 0.4, output: 16, audio: { input: 32, cachedInput: 0.4, output: 64 }, maxOutput: 4_096, contextWindow: 32_000 },
  gptRealtimeMini: { input: 0.6, cachedInput: 0.06, output: 2.4, audio: { input: 10, cachedInput: 0.3, output: 20 }, maxOutput: 4_096, contextWindow: 32_000 },
  gpt4oRealtime: { input: 5, cachedInput: 2.5, output: 20, audio: { input: 40, cachedInput: 2.5, output: 80 }, maxOutput: 4_096, contextWindow: 128_000 },
  gpt4oMiniRealtime: { input: 0.6, cachedInput: 0.3, output: 2.4, audio: { input: 10, cachedInput: 0.3, output: 20 }, maxOutput: 4_096, contextWindow: 128_000 },
} satisfies Record<string, ModelPrice>;

export default {
  id: 'openai',
  name: 'OpenAI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}/v1', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://api.openai.com',
  credential: {
    fields: {
      api_key: { secret: true, main: true, label: 'API key', help: 'A secret key from platform.openai.com, API keys. It starts with sk-.' },
      // Which organisation and project a multi-org key acts for: the organisation's choice, never the caller's.
      organization: {
        optional: true, header: 'openai-organization', description: 'OpenAI organisation id, org-…',
        label: 'Organization ID', help: 'Only for a key that belongs to several organizations: the org-… id from your OpenAI settings.',
      },
      project: {
        optional: true, header: 'openai-project', description: 'OpenAI project id, proj_…',
        label: 'Project ID', help: 'Only to use one project of the key: the proj_… id from your OpenAI project settings.',
      },
    },
  },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  // Browsers cannot set headers on a WebSocket: OpenAIRealtimeWebSocket offers the key as a subprotocol.
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }, { header: 'sec-websocket-protocol', pattern: /(?:^|,)\s*openai-insecure-api-key\.([^\s,]+)/ }],
  usage: 'openai',
  // Stored responses (and their input items) are readable, cancellable and deletable by id by anyone on
  // the project: `account`. POST v1/responses may store one (`store`), but creating is every chat's path.
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/completions' },
    { method: 'POST', path: 'v1/responses' },
    { method: 'GET', path: 'v1/responses/{id}', account: true },
    { method: 'DELETE', path: 'v1/responses/{id}', account: true },
    { method: 'POST', path: 'v1/responses/{id}/cancel', account: true },
    { method: 'GET', path: 'v1/responses/{id}/input_items', account: true },
    { method: 'POST', path: 'v1/responses/input_tokens' },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'POST', path: 'v1/moderations' },
    { method: 'POST', path: 'v1/images/generations' },
    { method: 'POST', path: 'v1/audio/speech' },
    { method: 'POST', path: 'v1/audio/transcriptions' },
    { method: 'POST', path: 'v1/audio/translations' },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'v1/models/{model}' },
    // WebSocket sessions (docs/agents/realtime.md): the Realtime API, and the Responses API as Codex CLI opens it. User audio
    // is billed at 1 token per 100 ms (https://developers.openai.com/api/docs/guides/realtime-costs): bounded here at twice
    // that, the rate of assistant audio (1 per 50 ms), for the special tokens around it.
    { method: 'GET', path: 'v1/realtime', websocket: { protocol: 'openai-realtime', modelQuery: 'model', inputAudioTokensPerSecond: 20 } },
    { method: 'GET', path: 'v1/responses', websocket: { protocol: 'openai-responses' } },
  ],
  // Built-in tools OpenAI runs and bills beyond the visible input (https://platform.openai.com/docs/pricing#built-in-tools):
  // their results come back as input tokens, so a budget reserves the context window for input, plus per call: web search
  // up to $25 per 1,000 calls (the preview's price, the highest), file search $2.50 per 1,000, code interpreter $0.03 per
  // container; the Responses API's `max_tool_calls` bounds the calls. Chat Completions' search models (`web_search_options`)
  // search as often as they choose, and image generation is billed per image: neither is bounded (refused under a budget).
  tools: {
    web_search: { match: { toolType: ['web_search*'] }, perUse: 0.025, uses: { field: 'max_tool_calls' } },
    file_search: { match: { toolType: ['file_search'], toolKey: ['vector_store_ids'] }, perUse: 0.0025, uses: { field: 'max_tool_calls' } },
    code_interpreter: { match: { toolType: ['code_interpreter'] }, perUse: 0.03, uses: { field: 'max_tool_calls' } },
    mcp: { match: { toolType: ['mcp'] } },
    image_generation: { match: { toolType: ['image_generation'] }, unbounded: true },
    chat_web_search: { match: { field: ['web_search_options'] }, unbounded: true },
  },
  // List prices (Standard tier) in USD per million tokens from https://developers.openai.com/api/docs/pricing, and each
  // model's page for context and output limits, as of `pricesAsOf`; operators override or extend them with
  // KEYWARD_PRICES. Exact names and their dated snapshots (`gpt-5-2025-*`): a prefix as short as `gpt-4o*` would also
  // price the audio, realtime and search variants, which cost more. `service_tier: "priority"`, Fast and Ultrafast
  // modes (billed 2x and more), Batch and Flex (50% off) and the Responses API's built-in tools (billed per call) are
  // not modelled. Embeddings have no output. From GPT-6 on, cache writes are billed (the 30-minute rate here; a
  // 12-hour write costs twice as much) and a request past 272k input tokens is billed whole at twice the input and
  // cache rates and 1.5x the output rate (`longContext`). Codex CLI 0.169.0 asks for gpt-6.1-sol by default.
  // Not confirmed where we read, so not listed (a budget refuses them until KEYWARD_PRICES prices them, or
  // KEYWARD_UNPRICED=family_max bounds them): gpt-6-astra, gpt-6-pro, gpt-5-pro. Not confirmed, so left as bounds:
  // the limits of GPT-6 Sol and Luna, of GPT-5.6 Sol and Terra and of GPT-5.2 to 5.5 (a budgeted request must name
  // its output cap), GPT-5.6 Sol's and Terra's cache-write prices, and the cached-input prices of GPT-5.2, 5.4 and 5.5
  // (charged as input).
  pricesAsOf: '2026-11-25',
  prices: {
    'gpt-6.2-sol': gpt6(2, 0.1, 2.5, 10, limits),
    'gpt-6.2-sol-2026-*': gpt6(2, 0.1, 2.5, 10, limits),
    'gpt-6.1-sol': gpt6(2, 0.1, 2.5, 10, limits),
    'gpt-6.1-sol-2026-*': gpt6(2, 0.1, 2.5, 10, limits),
    'gpt-6.1-terra': gpt6(1, 0.05, 1.25, 5, limits),
    'gpt-6.1-terra-2026-*': gpt6(1, 0.05, 1.25, 5, limits),
    'gpt-6-sol': gpt6(2, 0.2, 2.5, 10),
    'gpt-6-sol-2026-*': gpt6(2, 0.2, 2.5, 10),
    'gpt-6-luna': gpt6(0.1, 0.01, 0.125, 0.5),
    'gpt-6-luna-2026-*': gpt6(0.1, 0.01, 0.125, 0.5),
    // GPT-5.6 Luna and Terra as cut on 2026-07-30 (Sol unchanged).
    'gpt-5.6-sol': gpt6(5, 0.5, undefined, 30),
    'gpt-5.6-terra': gpt6(2, 0.2, undefined, 12),
    // GPT-5.6 Luna: the OpenAI Agents SDK's default model (0.20.0); its page gives its limits and cache writes at 1.25x input.
    'gpt-5.6-luna': gpt6(0.2, 0.02, 0.25, 1.2, limits),
    'gpt-5.5': { input: 5, output: 30 },
    'gpt-5.4': { input: 2.5, output: 15 },
    'gpt-5.2': { input: 1.75, output: 14 },
    'gpt-5.1': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5.1-2025-*': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-2025-*': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-mini-2025-*': { input: 0.25, cachedInput: 0.025, output: 2, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-nano': { input: 0.05, cachedInput: 0.005, output: 0.4, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-nano-2025-*': { input: 0.05, cachedInput: 0.005, output: 0.4, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-chat-latest': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4.1': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-2025-*': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-mini': { input: 0.4, cachedInput: 0.1, output: 1.6, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-mini-2025-*': { input: 0.4, cachedInput: 0.1, output: 1.6, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-nano': { input: 0.1, cachedInput: 0.025, output: 0.4, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-nano-2025-*': { input: 0.1, cachedInput: 0.025, output: 0.4, maxOutput: 32_768, contextWindow: 1_047_576 },
    // gpt-4o-2024-05-13 was priced higher ($5 / $15): the later snapshots only.
    'gpt-4o': { input: 2.5, cachedInput: 1.25, output: 10, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4o-2024-08-06': { input: 2.5, cachedInput: 1.25, output: 10, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4o-2024-11-20': { input: 2.5, cachedInput: 1.25, output: 10, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4o-mini-2024-07-18': { input: 0.15, cachedInput: 0.075, output: 0.6, maxOutput: 16_384, contextWindow: 128_000 },
    'o3': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-2025-*': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-pro': { input: 20, output: 80, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-pro-2025-*': { input: 20, output: 80, maxOutput: 100_000, contextWindow: 200_000 },
    'o4-mini': { input: 1.1, cachedInput: 0.275, output: 4.4, maxOutput: 100_000, contextWindow: 200_000 },
    'o4-mini-2025-*': { input: 1.1, cachedInput: 0.275, output: 4.4, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-mini': { input: 1.1, cachedInput: 0.55, output: 4.4, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-mini-2025-*': { input: 1.1, cachedInput: 0.55, output: 4.4, maxOutput: 100_000, contextWindow: 200_000 },
    'o1': { input: 15, cachedInput: 7.5, output: 60, maxOutput: 100_000, contextWindow: 200_000 },
    'o1-2024-12-17': { input: 15, cachedInput: 7.5, output: 60, maxOutput: 100_000, contextWindow: 200_000 },
    // Realtime models bill text and audio tokens apart (`audio`); a response's input is the whole conversation, up to
    // the context window (src/gateway/realtime/).
    'gpt-realtime': { ...realtime.gptRealtime },
    'gpt-realtime-2025-*': { ...realtime.gptRealtime },
    'gpt-realtime-mini': { ...realtime.gptRealtimeMini },
    'gpt-realtime-mini-2025-*': { ...realtime.gptRealtimeMini },
    'gpt-4o-realtime-preview': { ...realtime.gpt4oRealtime },
    'gpt-4o-realtime-preview-20*': { ...realtime.gpt4oRealtime },
    'gpt-4o-mini-realtime-preview': { ...realtime.gpt4oMiniRealtime },
    'gpt-4o-mini-realtime-preview-20*': { ...realtime.gpt4oMiniRealtime },
    // Realtime input-audio transcription (a session's `input_audio_transcription` / `audio.input.transcription`, or
    // `?intent=transcription`): gpt-4o-transcribe and gpt-4o-mini-transcribe bill text and audio input tokens apart and
    // text output (the transcript; `audio.output` is only the shape's: they make no audio), with a 16,000-token context
    // and 2,000-token output per transcription; whisper-1 bills $0.006 a minute of audio (`perAudioSecond`), no tokens.
    'gpt-4o-transcribe': { input: 2.5, output: 10, audio: { input: 6, output: 10 }, maxOutput: 2_000, contextWindow: 16_000 },
    'gpt-4o-mini-transcribe': { input: 1.25, output: 5, audio: { input: 3, output: 5 }, maxOutput: 2_000, contextWindow: 16_000 },
    'whisper-1': { input: 0, output: 0, perAudioSecond: 0.0001 },
    'text-embedding-3-small': { input: 0.02, output: 0, contextWindow: 8_191 },
    'text-embedding-3-large': { input: 0.13, output: 0, contextWindow: 8_191 },
    'text-embedding-ada-002': { input: 0.1, output: 0, contextWindow: 8_191 },
  },
} satisfies ProviderPlugin;
