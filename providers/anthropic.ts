// Anthropic: https://docs.anthropic.com/en/api. SDK base URL: <gateway>/v1/proxy
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'anthropic',
  name: 'Anthropic',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'Anthropic SDKs (Python, TypeScript, …) and Claude Code', env: { ANTHROPIC_BASE_URL: '{proxy}', ANTHROPIC_API_KEY: '{token}' } }],
  upstream: 'https://api.anthropic.com',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from console.anthropic.com, API keys. It starts with sk-ant-.' } } },
  auth: { kind: 'header', header: 'x-api-key' },
  // Its SDKs send x-api-key, or Authorization: Bearer when given an auth token.
  tokenIn: [{ header: 'x-api-key' }, { header: 'authorization', scheme: 'Bearer' }],
  usage: 'anthropic',
  headers: { 'anthropic-version': '2023-06-01' },
  // Message batches belong to the workspace, not to whoever made them: listing, reading results,
  // cancelling or deleting one reaches every holder's batches, and a new one joins that list.
  routes: [
    { method: 'POST', path: 'v1/messages' },
    { method: 'POST', path: 'v1/messages/count_tokens' },
    { method: 'POST', path: 'v1/messages/batches', account: true },
    { method: 'GET', path: 'v1/messages/batches', account: true },
    { method: 'GET', path: 'v1/messages/batches/{id}', account: true },
    { method: 'GET', path: 'v1/messages/batches/{id}/results', account: true },
    { method: 'POST', path: 'v1/messages/batches/{id}/cancel', account: true },
    { method: 'DELETE', path: 'v1/messages/batches/{id}', account: true },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'v1/models/{model}' },
  ],
  // Server tools Anthropic runs and bills beyond the visible input (https://docs.claude.com/en/docs/agents-and-tools/tool-use/overview,
  // its pricing page): their results come back as input tokens, so a budget reserves the context window for input. Web search
  // also costs $10 per 1,000 searches, at most the tool's `max_uses` each; web fetch and the MCP connector cost tokens only;
  // code execution is billed by container time, which no request field bounds (refused under a budget).
  tools: {
    web_search: { match: { toolType: ['web_search_*'] }, perUse: 0.01, uses: { toolField: 'max_uses' } },
    web_fetch: { match: { toolType: ['web_fetch_*'] } },
    code_execution: { match: { toolType: ['code_execution_*'] }, unbounded: true },
    mcp_connector: { match: { field: ['mcp_servers'] } },
  },
} satisfies ProviderPlugin;
