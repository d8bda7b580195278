// Together AI: https://docs.together.ai/reference
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'together',
  name: 'Together AI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}/v1', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://api.together.xyz',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from api.together.ai, Settings, API keys.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // No account-wide route (files, fine-tunes, batches, endpoints) is listed.
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/completions' },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'POST', path: 'v1/images/generations' },
    { method: 'POST', path: 'v1/rerank' },
    { method: 'POST', path: 'v1/audio/speech' },
    { method: 'POST', path: 'v1/audio/transcriptions' },
    { method: 'GET', path: 'v1/models' },
  ],
  // Serverless list prices in USD per million tokens from https://www.together.ai/pricing, as of `pricesAsOf`;
  // operators override or extend them with KEYWARD_PRICES (dedicated endpoints are billed by the hour, not here).
  // Checked again on 2026-11-25: no current list price page we could read confirms this table's models or their
  // successors, so it stands as dated; a model released since is unpriced (refused under a budget) until
  // KEYWARD_PRICES prices it or KEYWARD_UNPRICED=family_max bounds it by its family (docs/operate/providers.md, "Prices that keep up").
  pricesAsOf: '2025-08-15',
  prices: {
    'meta-llama/Llama-3.3-70B-Instruct-Turbo': { input: 0.88, output: 0.88, contextWindow: 131_072 },
    'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo': { input: 0.18, output: 0.18, contextWindow: 131_072 },
    'meta-llama/Meta-Llama-3.1-405B-Instruct-Turbo': { input: 3.5, output: 3.5, contextWindow: 130_815 },
    'meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8': { input: 0.27, output: 0.85 },
    'meta-llama/Llama-4-Scout-17B-16E-Instruct': { input: 0.18, output: 0.59 },
    'deepseek-ai/DeepSeek-V3': { input: 1.25, output: 1.25 },
    'deepseek-ai/DeepSeek-R1': { input: 3, output: 7 },
    'Qwen/Qwen2.5-72B-Instruct-Turbo': { input: 1.2, output: 1.2 },
    'openai/gpt-oss-120b': { input: 0.15, output: 0.6 },
    'moonshotai/Kimi-K2-Instruct': { input: 1, output: 3 },
  },
} satisfies ProviderPlugin;
