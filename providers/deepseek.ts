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
  // List prices in USD per million tokens from https://api-docs.deepseek.com/quick_start/pricing, as of `pricesAsOf`;
  // operators override or extend them with KEYWARD_PRICES. Cache hits are `cachedInput`; prompt_tokens counts hits
  // and misses together. DeepSeek bills twice as much in peak hours (01:00-04:00 and 06:00-10:00 UTC on weekdays) as
  // off-peak; the table cannot tell the hour, so it lists the peak prices (an off-peak request is charged double).
  // `deepseek-flash` is DeepSeek-V4.1-Flash, `deepseek-v4-pro` DeepSeek-V4-Pro; `deepseek-chat` and
  // `deepseek-reasoner` are deprecated aliases (non-thinking Flash, and thinking: priced as V4 Pro, the dearer, since
  // which model the alias serves is not confirmed). Not confirmed, so left as bounds: their context and output
  // limits (a budgeted request must name max_tokens).
  pricesAsOf: '2026-10-27',
  prices: {
    'deepseek-flash': { input: 0.3, cachedInput: 0.006, output: 1.2 },
    'deepseek-v4-flash': { input: 0.3, cachedInput: 0.006, output: 1.2 },
    'deepseek-v4-pro': { input: 1.32, cachedInput: 0.044, output: 3.96 },
    'deepseek-chat': { input: 0.3, cachedInput: 0.006, output: 1.2 },
    'deepseek-reasoner': { input: 1.32, cachedInput: 0.044, output: 3.96 },
  },
} satisfies ProviderPlugin;
