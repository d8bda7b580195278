// Google AI (Gemini API): https://ai.google.dev/api. The model is a path segment;
// `?key=` is how its REST examples pass a key, so it is stripped and accepted as the proxy token.
import type { ProviderPlugin } from '../src/catalog/provider.js';

const versions = ['v1beta', 'v1'] as const;
const actions = ['generateContent', 'streamGenerateContent', 'countTokens', 'embedContent', 'batchEmbedContents'] as const;

export default {
  id: 'gemini',
  name: 'Google Gemini',
  upstream: 'https://generativelanguage.googleapis.com',
  credential: {
    fields: {
      api_key: { secret: true, main: true },
      // The Google Cloud project billed and quota-checked: the organisation's choice, never the caller's.
      project: { optional: true, header: 'x-goog-user-project', description: 'Google Cloud project id for quota and billing' },
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
    // Gemini Live (docs/realtime.md): one WebSocket session per connection; the model is named in its first message.
    ...['v1beta', 'v1alpha', 'v1'].map((v) => ({
      method: 'GET' as const, path: `ws/google.ai.generativelanguage.${v}.GenerativeService.BidiGenerateContent`, websocket: { protocol: 'gemini-live' as const },
    })),
    // The OpenAI-compatible surface.
    { method: 'POST', path: 'v1beta/openai/chat/completions' },
    { method: 'POST', path: 'v1beta/openai/embeddings' },
    { method: 'GET', path: 'v1beta/openai/models' },
  ],
  // Paid-tier list prices in USD per million tokens from https://ai.google.dev/gemini-api/docs/pricing (and the models
  // page for limits), as of `pricesAsOf`; operators override or extend them with KEYWARD_PRICES. Text/image/video
  // input prices (audio input costs more on Flash); thinking tokens are output. The Pro models' prices double past
  // 200k input tokens (`longContext`). Cached reads are priced at the explicit-cache rate (25% of input on 2.5; the
  // storage fee per hour is not a request's cost). Exact names: `gemini-2.5-flash*` would also price the image and
  // audio variants, which cost more.
  pricesAsOf: '2025-11-18',
  prices: {
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
