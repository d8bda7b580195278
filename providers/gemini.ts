// Google AI (Gemini API): https://ai.google.dev/api. The model is a path segment;
// `?key=` is how its REST examples pass a key, so it is stripped and accepted as the proxy token.
import type { ProviderPlugin } from '../src/catalog/provider.js';

const versions = ['v1beta', 'v1'] as const;
const actions = ['generateContent', 'streamGenerateContent', 'countTokens', 'embedContent', 'batchEmbedContents'] as const;

export default {
  id: 'gemini',
  name: 'Google Gemini',
  upstream: 'https://generativelanguage.googleapis.com',
  keyHeader: 'x-goog-api-key',
  // The Google Cloud project billed and quota-checked: the organisation's choice, never the caller's.
  credentialFields: [{ name: 'project', kind: 'plain', header: 'x-goog-user-project', description: 'Google Cloud project id for quota and billing' }],
  // `access_token` is how Google APIs take an OAuth token in the query: a credential too, so never forwarded.
  keyQueryParams: ['key', 'access_token'],
  // No account-wide route is listed (files, cached contents, tuned models and batches are not).
  allow: [
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
