// xAI: https://docs.x.ai/docs/api-reference
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'xai',
  name: 'xAI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}/v1', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://api.x.ai',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from console.x.ai, API keys. It starts with xai-.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }, { header: 'x-api-key' }], // its Anthropic-compatible route's SDKs use x-api-key
  usage: 'openai',
  // Stored responses are the team's, readable and deletable by id by any of its keys: `account`.
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/responses' },
    { method: 'GET', path: 'v1/responses/{id}', account: true },
    { method: 'DELETE', path: 'v1/responses/{id}', account: true },
    { method: 'POST', path: 'v1/messages' },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'POST', path: 'v1/images/generations' },
    { method: 'POST', path: 'v1/tokenize-text' },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'v1/models/{model}' },
    { method: 'GET', path: 'v1/language-models' },
    { method: 'GET', path: 'v1/language-models/{model}' },
  ],
} satisfies ProviderPlugin;
