// Perplexity: https://docs.perplexity.ai/api-reference
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'perplexity',
  name: 'Perplexity',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://api.perplexity.ai',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from perplexity.ai, Settings, API. It starts with pplx-.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // Async jobs are the account's: the list shows everyone's, and a result is readable by id.
  routes: [
    { method: 'POST', path: 'chat/completions' },
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'async/chat/completions', account: true },
    { method: 'GET', path: 'async/chat/completions', account: true },
    { method: 'GET', path: 'async/chat/completions/{id}', account: true },
    { method: 'POST', path: 'search' },
    { method: 'POST', path: 'v1/responses' },
  ],
  // The search context size sets the request fee: `requestFee` is the high size's, so every size is priced; any other
  // value, the Search API and async (Deep Research) requests are refused under a cap (price_unknown).
  priceDimensions: {
    search_context_size: { field: 'web_search_options.search_context_size', values: { low: 'standard', medium: 'standard', high: 'standard' } },
    // The Search API is billed per request, and async (Deep Research) requests by citations and searches: no price here.
    search: { routes: ['POST search'], present: 'search' },
    deep_research: { routes: ['POST async/chat/completions'], present: 'deep_research' },
  },
} satisfies ProviderPlugin;
