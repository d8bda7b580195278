// Fireworks AI: https://docs.fireworks.ai/api-reference. SDK base URL: <gateway>/v1/proxy/inference/v1
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'fireworks',
  name: 'Fireworks AI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}/inference/v1', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://api.fireworks.ai',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from fireworks.ai, Settings, API keys. It starts with fw_.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }, { header: 'x-api-key' }], // its Anthropic-compatible route's SDKs use x-api-key
  usage: 'openai',
  // Inference only: no account-wide route (datasets, fine-tuning, deployments) is listed.
  routes: [
    { method: 'POST', path: 'inference/v1/chat/completions' },
    { method: 'POST', path: 'inference/v1/completions' },
    { method: 'POST', path: 'inference/v1/embeddings' },
    { method: 'POST', path: 'inference/v1/messages' },
    { method: 'GET', path: 'inference/v1/models' },
  ],
  // Serverless list prices in USD per million tokens from https://fireworks.ai/pricing, as of `pricesAsOf`; operators
  // override or extend them with KEYWARD_PRICES (on-demand deployments are billed by the GPU-second, not here).
  // Cached input (discounted by Fireworks) is priced as input here: never below the bill.
  // Checked again on 2026-11-25: no current list price page we could read confirms this table's models or their
  // successors, so it stands as dated; a model released since is unpriced (refused under a budget) until
  // KEYWARD_PRICES prices it or KEYWARD_UNPRICED=family_max bounds it by its family (docs/operate/providers.md, "Prices that keep up").
  pricesAsOf: '2025-08-15',
  prices: {
    'accounts/fireworks/models/llama-v3p3-70b-instruct': { input: 0.9, output: 0.9, contextWindow: 131_072 },
    'accounts/fireworks/models/llama-v3p1-8b-instruct': { input: 0.2, output: 0.2, contextWindow: 131_072 },
    'accounts/fireworks/models/llama-v3p1-405b-instruct': { input: 3, output: 3, contextWindow: 131_072 },
    'accounts/fireworks/models/llama4-maverick-instruct-basic': { input: 0.22, output: 0.88 },
    'accounts/fireworks/models/llama4-scout-instruct-basic': { input: 0.15, output: 0.6 },
    'accounts/fireworks/models/deepseek-v3': { input: 0.9, output: 0.9 },
    'accounts/fireworks/models/deepseek-r1': { input: 3, output: 8 },
    'accounts/fireworks/models/gpt-oss-120b': { input: 0.15, output: 0.6, contextWindow: 131_072 },
    'accounts/fireworks/models/gpt-oss-20b': { input: 0.07, output: 0.3, contextWindow: 131_072 },
    'accounts/fireworks/models/kimi-k2-instruct': { input: 0.6, output: 2.5 },
  },
} satisfies ProviderPlugin;
