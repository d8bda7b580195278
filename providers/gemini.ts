// Google AI (Gemini API): https://ai.google.dev/api. The model is a path segment;
// `?key=` is how its REST examples pass a key, so it is stripped and accepted as the proxy token.
import type { ProviderPlugin } from '../src/catalog/provider.js';

const versions = ['v1beta', 'v1'] as const;
const actions = ['generateContent', 'streamGenerateContent', 'countTokens', 'embedContent', 'batchEmbedContents'] as const;

export default {
  id: 'gemini',
  name: 'Google Gemini',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [
    { name: 'Google Gen AI SDK (@google/genai)', env: { GOOGLE_GEMINI_BASE_URL: '{proxy}', GEMINI_API_KEY: '{token}' } },
    { name: "OpenAI SDKs on Gemini's OpenAI-compatible surface", env: { OPENAI_BASE_URL: '{proxy}/v1beta/openai', OPENAI_API_KEY: '{token}' } },
  ],
  upstream: 'https://generativelanguage.googleapis.com',
  credential: {
    fields: {
      api_key: { secret: true, main: true, label: 'API key', help: 'A Gemini API key from aistudio.google.com, API keys. It starts with AIza.' },
      // The Google Cloud project billed and quota-checked: the organisation's choice, never the caller's.
      project: {
        optional: true, header: 'x-goog-user-project', description: 'Google Cloud project id for quota and billing',
        label: 'Google Cloud project', help: 'Only to bill and count quota on a specific Google Cloud project: its id.',
      },
    },
  },
  auth: { kind: 'header', header: 'x-goog-api-key' },
  // `access_token` is how Google APIs take an OAuth token in the query: a credential too, so never forwarded.
  tokenIn: [{ header: 'x-goog-api-key' }, { query: 'key' }, { query: 'access_token' }],
  // Its own shape, and the OpenAI-compatible surface's.
  usage: 'gemini',
  // No account-wide route is listed (files, cached contents, tuned models and batches are not).
  routes: [
    ...versions.flatMap((v) => [
      ...actions.map((a) => ({ method: 'POST' as const, path: `${v}/models/{model}:${a}` })),
      { method: 'GET' as const, path: `${v}/models` },
      { method: 'GET' as const, path: `${v}/models/{model}` },
    ]),
    // Gemini Live (docs/agents/realtime.md): one WebSocket session per connection; the model is named in its first message.
    ...['v1beta', 'v1alpha', 'v1'].map((v) => ({
      method: 'GET' as const, path: `ws/google.ai.generativelanguage.${v}.GenerativeService.BidiGenerateContent`, websocket: { protocol: 'gemini-live' as const },
    })),
    // The OpenAI-compatible surface.
    { method: 'POST', path: 'v1beta/openai/chat/completions' },
    { method: 'POST', path: 'v1beta/openai/embeddings' },
    { method: 'GET', path: 'v1beta/openai/models' },
  ],
  // Tools Google runs and bills beyond the visible input (https://ai.google.dev/gemini-api/docs/pricing): their results come
  // back as input tokens, so a budget reserves the context window for input. Grounding with Google Search costs $35 per 1,000
  // grounded prompts on Gemini 2.x and earlier (one per request); Gemini 3 bills each search query, and a prompt may make
  // any number (refused under a budget). Maps grounding $25 per 1,000 grounded prompts. URL context, code execution and
  // file search cost tokens only. Both spellings of each key (the API takes camelCase and snake_case).
  tools: {
    google_search: { match: { toolKey: ['googleSearch', 'google_search', 'googleSearchRetrieval', 'google_search_retrieval'] }, perUse: 0.035, uses: { perRequest: 1 } },
    google_search_per_query: { match: { toolKey: ['googleSearch', 'google_search', 'googleSearchRetrieval', 'google_search_retrieval'] }, unbounded: true, models: ['gemini-3*'] },
    google_maps: { match: { toolKey: ['googleMaps', 'google_maps'] }, perUse: 0.025, uses: { perRequest: 1 } },
    url_context: { match: { toolKey: ['urlContext', 'url_context'] } },
    code_execution: { match: { toolKey: ['codeExecution', 'code_execution'] } },
    file_search: { match: { toolKey: ['fileSearch', 'file_search'] } },
  },
  // Paid-tier list prices in USD per million tokens from https://ai.google.dev/gemini-api/docs/pricing (and the models
  // page for limits), as of `pricesAsOf`; operators override or extend them with KEYWARD_PRICES. Text/image/video
  // input prices (audio input costs more on Flash); thinking tokens are output. The Pro models' prices double past
  // 200k input tokens (`longContext`). Cached reads are priced at the explicit-cache rate (25% of input on 2.5; the
  // storage fee per hour is not a request's cost). Exact names: `gemini-2.5-flash*` would also price the image and
  // audio variants, which cost more. The page as read on 2026-10-07 (`pricesAsOf`) added Gemini 3.8 Flash (at an
  // introductory $0.75 / $3.75 through 2026-12-31, then $1.50 / $7.50: raise it then), 3.5 Flash and Flash-Lite and
  // 3.1 Pro Preview; not confirmed where we read, so left as bounds: their cached-input prices (charged as input) and
  // limits (a budgeted request must name maxOutputTokens), and 3.5 Flash's and 3.8 Flash's prompts past 200k.
  pricesAsOf: '2026-10-07',
  prices: {
    'gemini-3.8-flash': { input: 0.75, output: 3.75 },
    'gemini-3.8-flash-preview': { input: 0.75, output: 3.75 },
    'gemini-3.5-flash': { input: 1.5, output: 9 },
    'gemini-3.5-flash-preview': { input: 1.5, output: 9 },
    'gemini-3.5-flash-lite': { input: 0.3, output: 2.5 },
    'gemini-3.5-flash-lite-preview': { input: 0.3, output: 2.5 },
    'gemini-3.1-pro-preview': { input: 2, output: 12, longContext: { aboveInputTokens: 200_000, input: 4, output: 18 } },
    'gemini-3-pro-preview': {
      input: 2, cachedInput: 0.2, output: 12, maxOutput: 65_536, contextWindow: 1_048_576,
      longContext: { aboveInputTokens: 200_000, input: 4, cachedInput: 0.4, output: 18 },
    },
    'gemini-2.5-pro': {
      input: 1.25, cachedInput: 0.3125, output: 10, maxOutput: 65_536, contextWindow: 1_048_576,
      longContext: { aboveInputTokens: 200_000, input: 2.5, cachedInput: 0.625, output: 15 },
    },
    'gemini-2.5-flash': { input: 0.3, cachedInput: 0.075, output: 2.5, maxOutput: 65_536, contextWindow: 1_048_576 },
    'gemini-2.5-flash-lite': { input: 0.1, cachedInput: 0.025, output: 0.4, maxOutput: 65_536, contextWindow: 1_048_576 },
    'gemini-2.0-flash': { input: 0.1, cachedInput: 0.025, output: 0.4, maxOutput: 8_192, contextWindow: 1_048_576 },
    'gemini-2.0-flash-001': { input: 0.1, cachedInput: 0.025, output: 0.4, maxOutput: 8_192, contextWindow: 1_048_576 },
    'gemini-2.0-flash-lite': { input: 0.075, output: 0.3, maxOutput: 8_192, contextWindow: 1_048_576 },
    'gemini-2.0-flash-lite-001': { input: 0.075, output: 0.3, maxOutput: 8_192, contextWindow: 1_048_576 },
    // Live API models: text apart from audio, image and video (`audio`), same page and date.
    'gemini-2.0-flash-live-001': { input: 0.35, output: 1.5, audio: { input: 2.1, output: 8.5 }, maxOutput: 8_192, contextWindow: 1_048_576 },
    'gemini-live-2.5-flash-preview': { input: 0.5, output: 2, audio: { input: 3, output: 12 }, maxOutput: 8_192, contextWindow: 1_048_576 },
    'gemini-2.5-flash-native-audio-preview-09-2025': { input: 0.5, output: 2, audio: { input: 3, output: 12 }, maxOutput: 8_192, contextWindow: 131_072 },
    'gemini-2.5-flash-preview-native-audio-dialog': { input: 0.5, output: 2, audio: { input: 3, output: 12 }, maxOutput: 8_192, contextWindow: 131_072 },
  },
} satisfies ProviderPlugin;
