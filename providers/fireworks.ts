// Fireworks AI: https://docs.fireworks.ai/api-reference. SDK base URL: <gateway>/v1/proxy/inference/v1
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
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
  // No request field or mode changes what it bills beyond the tokens priced in its price file.
  priceDimensions: {},
} satisfies ProviderPlugin;
