/**
 * An OpenAI-compatible model API (vLLM, LiteLLM, a hosted inference service…) as a Keyward provider: the key
 * as a Bearer token, OpenAI's usage shape, the routes OpenAI's SDKs call, and prices written inline so budgets
 * can bound its requests. Point KEYWARD_PROVIDERS_DIR at this folder; its SDKs then reach it through Keyward
 * with the variables in `sdk`.
 */
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'acme-llm',
  name: 'Acme LLM',
  upstream: 'https://api.acme-llm.example',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from the Acme LLM console.' } } },
  auth: { kind: 'header', header: 'authorization' },
  usage: 'openai',
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'GET', path: 'v1/models' },
  ],
  prices: {
    'acme-large': { input: 3, output: 12, maxOutput: 8192, contextWindow: 131072 },
    'acme-small-*': { input: 0.2, output: 0.8, maxOutput: 4096, contextWindow: 32768 },
  },
  pricesAsOf: '2026-11-01',
  pricesSource: 'https://acme-llm.example/pricing',
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …)', env: { OPENAI_BASE_URL: '{proxy}/v1', OPENAI_API_KEY: '{token}' } }],
} satisfies ProviderPlugin;
