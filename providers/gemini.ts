// Google AI (Gemini API): https://ai.google.dev/api. The model is a path segment;
// `?key=` is how its REST examples pass a key, so it is stripped and accepted as the proxy token.
import type { ProviderPlugin } from '@keyward/sdk';
import { geminiLive } from './lib/realtime/gemini-live.js';

const versions = ['v1beta', 'v1'] as const;
const actions = ['generateContent', 'streamGenerateContent', 'countTokens', 'embedContent', 'batchEmbedContents'] as const;

export default {
  apiVersion: 1,
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
      method: 'GET' as const, path: `ws/google.ai.generativelanguage.${v}.GenerativeService.BidiGenerateContent`, websocket: { protocol: geminiLive },
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
  // Every request field or mode that changes what Google bills (https://ai.google.dev/gemini-api/docs/pricing): response
  // modalities (`generationConfig.responseModalities`, either spelling: audio or image output) are priced where the model
  // has audio prices; under a cap anything else is refused (price_unknown). Batches are not a route here.
  priceDimensions: {
    response_modalities: { field: 'generationConfig.responseModalities', present: 'audio', description: 'audio (or image) output' },
    response_modalities_snake: { field: 'generation_config.response_modalities', present: 'audio', description: 'the same, snake_case' },
    tools: { pricedBy: 'tools', description: 'provider-side tools: `tools` above' },
    long_context: { pricedBy: 'longContext', description: 'a request past a long-context threshold, priced whole at its prices' },
  },
} satisfies ProviderPlugin;
