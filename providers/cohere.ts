// Cohere: https://docs.cohere.com/reference
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'cohere',
  name: 'Cohere',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'Cohere SDK (Python)', code: "cohere.ClientV2(api_key='{token}', base_url='{proxy}')" }],
  upstream: 'https://api.cohere.com',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from dashboard.cohere.com, API keys.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // No account-wide route (datasets, fine-tunes, connectors, embed jobs) is listed.
  routes: [
    { method: 'POST', path: 'v2/chat' },
    { method: 'POST', path: 'v2/embed' },
    { method: 'POST', path: 'v2/rerank' },
    { method: 'POST', path: 'v1/chat' },
    { method: 'POST', path: 'v1/embed' },
    { method: 'POST', path: 'v1/rerank' },
    { method: 'POST', path: 'v1/tokenize' },
    { method: 'POST', path: 'v1/detokenize' },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'v1/models/{model}' },
    { method: 'POST', path: 'compatibility/v1/chat/completions' },
    { method: 'POST', path: 'compatibility/v1/embeddings' },
  ],
  // Rerank is billed per search, which has no price here: refused under a cap (price_unknown).
  priceDimensions: {
    rerank: { routes: ['POST v2/rerank', 'POST v1/rerank'], present: 'rerank' },
  },
} satisfies ProviderPlugin;
