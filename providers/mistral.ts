// Mistral AI: https://docs.mistral.ai/api/
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'mistral',
  name: 'Mistral AI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'Mistral SDK (Python)', code: "Mistral(api_key='{token}', server_url='{proxy}')" }],
  upstream: 'https://api.mistral.ai',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from console.mistral.ai, API keys.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // Agents are the workspace's stored objects (instructions, document libraries): running one by
  // `agent_id` reads what another member set up, so it is `account`.
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/fim/completions' },
    { method: 'POST', path: 'v1/agents/completions', account: true },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'POST', path: 'v1/moderations' },
    { method: 'POST', path: 'v1/chat/moderations' },
    { method: 'POST', path: 'v1/ocr' },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'v1/models/{model}' },
  ],
  // List prices in USD per million tokens from https://mistral.ai/pricing#api-pricing, as of `pricesAsOf`; operators
  // override or extend them with KEYWARD_PRICES. Exact names where a family's older versions were priced otherwise
  // (`mistral-medium-2312`), a prefix where every version shares the price; Mistral publishes no output limit apart
  // from the context window.
  // Checked again on 2026-11-25: no current list price page we could read confirms this table's models or their
  // successors, so it stands as dated; a model released since is unpriced (refused under a budget) until
  // KEYWARD_PRICES prices it or KEYWARD_UNPRICED=family_max bounds it by its family (docs/operate/providers.md, "Prices that keep up").
  pricesAsOf: '2025-08-12',
  prices: {
    'mistral-large-latest': { input: 2, output: 6, contextWindow: 131_072 },
    'mistral-large-2411': { input: 2, output: 6, contextWindow: 131_072 },
    'mistral-medium-latest': { input: 0.4, output: 2, contextWindow: 131_072 },
    'mistral-medium-2508': { input: 0.4, output: 2, contextWindow: 131_072 },
    'mistral-medium-2505': { input: 0.4, output: 2, contextWindow: 131_072 },
    'mistral-small-latest': { input: 0.1, output: 0.3, contextWindow: 131_072 },
    'mistral-small-2506': { input: 0.1, output: 0.3, contextWindow: 131_072 },
    'mistral-small-2503': { input: 0.1, output: 0.3, contextWindow: 131_072 },
    'magistral-medium*': { input: 2, output: 5 },
    'magistral-small*': { input: 0.5, output: 1.5 },
    'codestral-latest': { input: 0.3, output: 0.9, contextWindow: 256_000 },
    'codestral-2508': { input: 0.3, output: 0.9, contextWindow: 256_000 },
    'codestral-2501': { input: 0.3, output: 0.9, contextWindow: 256_000 },
    'devstral-medium*': { input: 0.4, output: 2, contextWindow: 131_072 },
    'devstral-small*': { input: 0.1, output: 0.3, contextWindow: 131_072 },
    'ministral-8b*': { input: 0.1, output: 0.1, contextWindow: 131_072 },
    'ministral-3b*': { input: 0.04, output: 0.04, contextWindow: 131_072 },
    'mistral-embed': { input: 0.1, output: 0, contextWindow: 8_192 },
  },
} satisfies ProviderPlugin;
