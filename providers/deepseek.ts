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
} satisfies ProviderPlugin;
