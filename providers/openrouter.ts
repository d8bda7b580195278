// OpenRouter: https://openrouter.ai/docs/api-reference. SDK base URL: <gateway>/v1/proxy/api/v1
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'openrouter',
  name: 'OpenRouter',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}/api/v1', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://openrouter.ai',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from openrouter.ai, Keys. It starts with sk-or-.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // `key` shows the key's credit and limits; `generation?id=` any generation's cost and metadata on
  // the account: both `account`.
  routes: [
    { method: 'POST', path: 'api/v1/chat/completions' },
    { method: 'POST', path: 'api/v1/completions' },
    { method: 'POST', path: 'api/v1/responses' },
    { method: 'POST', path: 'api/v1/embeddings' },
    { method: 'GET', path: 'api/v1/models' },
    { method: 'GET', path: 'api/v1/generation', account: true },
    { method: 'GET', path: 'api/v1/key', account: true },
  ],
  // OpenRouter passes some OpenAI fields on to the provider it routes to: a `service_tier` has no price here (refused
  // under a cap, price_unknown).
  priceDimensions: {
    service_tier: { field: 'service_tier', values: {} },
    long_context: { pricedBy: 'longContext', description: 'a request past a long-context threshold, priced whole at its prices' },
  },
} satisfies ProviderPlugin;
