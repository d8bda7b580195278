// Perplexity: https://docs.perplexity.ai/api-reference
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'perplexity',
  name: 'Perplexity',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://api.perplexity.ai',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from perplexity.ai, Settings, API. It starts with pplx-.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // Async jobs are the account's: the list shows everyone's, and a result is readable by id.
  routes: [
    { method: 'POST', path: 'chat/completions' },
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'async/chat/completions', account: true },
    { method: 'GET', path: 'async/chat/completions', account: true },
    { method: 'GET', path: 'async/chat/completions/{id}', account: true },
    { method: 'POST', path: 'search' },
    { method: 'POST', path: 'v1/responses' },
  ],
  // List prices in USD per million tokens from https://docs.perplexity.ai/getting-started/pricing, as of `pricesAsOf`;
  // operators override or extend them with KEYWARD_PRICES. Each request also pays a search fee by its context size
  // (`requestFee`: the high size's, so a request is never priced below its bill). Deep Research bills citations,
  // searches and reasoning separately and is not listed.
  // Checked again on 2026-11-25: no current list price page we could read confirms this table's models or their
  // successors, so it stands as dated; a model released since is unpriced (refused under a budget) until
  // KEYWARD_PRICES prices it or KEYWARD_UNPRICED=family_max bounds it by its family (docs/operate/providers.md, "Prices that keep up").
  pricesAsOf: '2025-08-01',
  prices: {
    'sonar': { input: 1, output: 1, requestFee: 0.012, contextWindow: 128_000 },
    'sonar-pro': { input: 3, output: 15, requestFee: 0.014, maxOutput: 8_000, contextWindow: 200_000 },
    'sonar-reasoning': { input: 1, output: 5, requestFee: 0.012, contextWindow: 128_000 },
    'sonar-reasoning-pro': { input: 2, output: 8, requestFee: 0.014, contextWindow: 128_000 },
  },
} satisfies ProviderPlugin;
