// DeepSeek: https://api-docs.deepseek.com/api/deepseek-api. Its base URL works with and without /v1
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'deepseek',
  name: 'DeepSeek',
  upstream: 'https://api.deepseek.com',
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
