// Cohere: https://docs.cohere.com/reference
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
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
  // List prices in USD per million tokens from https://cohere.com/pricing (and the models page for limits), as of
  // `pricesAsOf`; operators override or extend them with KEYWARD_PRICES. A response's usage holds `billed_units` and
  // then `tokens` (which add the prompt template, so are at least the bill); the last counts are read, so a Cohere
  // request is priced at or above its bill. Rerank is billed per search and has no price here.
  // Checked again on 2026-11-25: no current list price page we could read confirms this table's models or their
  // successors, so it stands as dated; a model released since is unpriced (refused under a budget) until
  // KEYWARD_PRICES prices it or KEYWARD_UNPRICED=family_max bounds it by its family (docs/operate/providers.md, "Prices that keep up").
  pricesAsOf: '2025-08-01',
  prices: {
    'command-a-03-2025': { input: 2.5, output: 10, maxOutput: 8_000, contextWindow: 256_000 },
    'command-r-plus-08-2024': { input: 2.5, output: 10, maxOutput: 4_000, contextWindow: 128_000 },
    'command-r-08-2024': { input: 0.15, output: 0.6, maxOutput: 4_000, contextWindow: 128_000 },
    'command-r7b-12-2024': { input: 0.0375, output: 0.15, maxOutput: 4_000, contextWindow: 128_000 },
  },
} satisfies ProviderPlugin;
