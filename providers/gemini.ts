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
    // The OpenAI-compatible surface.
    { method: 'POST', path: 'v1beta/openai/chat/completions' },
    { method: 'POST', path: 'v1beta/openai/embeddings' },
    { method: 'GET', path: 'v1beta/openai/models' },
  ],
} satisfies ProviderPlugin;
