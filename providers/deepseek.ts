// DeepSeek: https://api-docs.deepseek.com/api/deepseek-api. Its base URL works with and without /v1
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'deepseek',
  name: 'DeepSeek',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://api.deepseek.com',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from platform.deepseek.com, API keys. It starts with sk-.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // The balance is the account's.
  routes: [
    { method: 'POST', path: 'chat/completions' },
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'beta/completions' },
    { method: 'GET', path: 'models' },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'user/balance', account: true },
  ],
  // List prices in USD per million tokens from https://api-docs.deepseek.com/quick_start/pricing, as of `pricesAsOf`
  // (DeepSeek-V3.2-Exp behind both names); operators override or extend them with KEYWARD_PRICES. Cache hits are
  // `cachedInput`; prompt_tokens counts hits and misses together.
  pricesAsOf: '2025-09-29',
  prices: {
    'deepseek-chat': { input: 0.28, cachedInput: 0.028, output: 0.42, maxOutput: 8_192, contextWindow: 128_000 },
    'deepseek-reasoner': { input: 0.28, cachedInput: 0.028, output: 0.42, maxOutput: 65_536, contextWindow: 128_000 },
  },
} satisfies ProviderPlugin;
