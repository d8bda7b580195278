// Anthropic: https://docs.anthropic.com/en/api. SDK base URL: <gateway>/v1/proxy
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
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
  // Every request field or mode that changes what Anthropic bills (https://platform.claude.com/docs/en/about-claude/pricing):
  // under a cap a value with no price is refused (price_unknown). Fast mode (`speed: "fast"`, with the fast-mode beta
  // header: https://platform.claude.com/docs/en/build-with-claude/fast-mode) at the model's fast price where listed;
  // US-only inference (`inference_geo: "us"`) at 1.1x for the models that offer it; `service_tier` (`auto` uses
  // Priority Tier capacity where the organisation bought it: the usage reports `priority`, which has no price here, so
  // such a request is charged no less than its reservation); message batches (half price, results later) are not priced.
  priceDimensions: {
    fast_mode: { field: 'speed', reported: 'speed', values: { standard: 'standard', fast: 'fast' } },
    inference_geo: { field: 'inference_geo', values: { global: 'standard', us: 'us' } },
    service_tier: { field: 'service_tier', reported: 'service_tier', values: { auto: 'standard', standard_only: 'standard', standard: 'standard', priority: 'priority', batch: 'batch' } },
    batch: { routes: ['POST v1/messages/batches'], present: 'batch' },
    tools: { pricedBy: 'tools', description: 'provider-side tools: `tools` above' },
    long_context: { pricedBy: 'longContext', description: 'a request past a long-context threshold, priced whole at its prices' },
  },
} satisfies ProviderPlugin;
