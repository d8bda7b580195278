// DeepSeek: https://api-docs.deepseek.com/api/deepseek-api. Its base URL works with and without /v1
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
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
  // No request field or mode changes what it bills beyond the tokens priced in its price file.
  priceDimensions: {},
} satisfies ProviderPlugin;
