// xAI: https://docs.x.ai/docs/api-reference
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
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
  // Server-side tools xAI runs and bills per call beyond the visible input (https://docs.x.ai/docs/guides/tools/overview):
  // web and X search, code execution, collections search, remote MCP. No request field bounds their calls: refused under
  // a cap (tools_unbounded).
  tools: {
    server_tools: { match: { toolType: ['web_search', 'x_search', 'code_execution', 'code_interpreter', 'collections_search', 'file_search', 'mcp'] }, unbounded: true },
  },
  // Live Search (`search_parameters`: $25 per 1,000 sources, which no request field bounds) has no price here: refused
  // under a cap (price_unknown). Server-side tools: `tools` above.
  priceDimensions: {
    live_search: { field: 'search_parameters', present: 'live_search' },
    images: { routes: ['POST v1/images/generations'], present: 'image', description: 'billed per image: no price here' },
    tools: { pricedBy: 'tools', description: 'provider-side tools: `tools` above' },
    long_context: { pricedBy: 'longContext', description: 'a request past a long-context threshold, priced whole at its prices' },
  },
} satisfies ProviderPlugin;
