// Anthropic: https://docs.anthropic.com/en/api. SDK base URL: <gateway>/v1/proxy
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'anthropic',
  name: 'Anthropic',
  upstream: 'https://api.anthropic.com',
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
  // List prices in USD per million tokens from https://docs.claude.com/en/docs/about-claude/pricing (and the models
  // overview for output and context limits), as of `pricesAsOf`; operators override or extend them with KEYWARD_PRICES.
  // Cache reads cost 0.1× input; cache writes are priced at the 5-minute TTL's 1.25× (a 1-hour write costs 2×, which
  // this table cannot tell apart: set cacheWriteInput to 2× input in KEYWARD_PRICES if you use 1-hour caching).
  // Aliases and dated snapshots share a prefix (`claude-sonnet-4-5` and `claude-sonnet-4-5-20250929`). Sonnet 4 and 4.5
  // take up to 1M input tokens (beta header); a request whose input passes 200k is billed at the long-context prices.
  // Batch (50% off) and the US-only inference premium are not modelled.
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
  pricesAsOf: '2025-11-24',
  prices: {
    'claude-opus-4-5*': { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25, maxOutput: 64_000, contextWindow: 200_000 },
    'claude-opus-4-1*': { input: 15, cachedInput: 1.5, cacheWriteInput: 18.75, output: 75, maxOutput: 32_000, contextWindow: 200_000 },
    'claude-opus-4-0': { input: 15, cachedInput: 1.5, cacheWriteInput: 18.75, output: 75, maxOutput: 32_000, contextWindow: 200_000 },
    'claude-opus-4-2025*': { input: 15, cachedInput: 1.5, cacheWriteInput: 18.75, output: 75, maxOutput: 32_000, contextWindow: 200_000 },
    'claude-sonnet-4-5*': {
      input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 64_000, contextWindow: 1_000_000,
      longContext: { aboveInputTokens: 200_000, input: 6, cachedInput: 0.6, cacheWriteInput: 7.5, output: 22.5 },
    },
    'claude-sonnet-4-0': {
      input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 64_000, contextWindow: 1_000_000,
      longContext: { aboveInputTokens: 200_000, input: 6, cachedInput: 0.6, cacheWriteInput: 7.5, output: 22.5 },
    },
    'claude-sonnet-4-2025*': {
      input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 64_000, contextWindow: 1_000_000,
      longContext: { aboveInputTokens: 200_000, input: 6, cachedInput: 0.6, cacheWriteInput: 7.5, output: 22.5 },
    },
    'claude-haiku-4-5*': { input: 1, cachedInput: 0.1, cacheWriteInput: 1.25, output: 5, maxOutput: 64_000, contextWindow: 200_000 },
    // 64k output, 128k with the output-128k beta header: the larger is the bound.
    'claude-3-7-sonnet*': { input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 128_000, contextWindow: 200_000 },
    'claude-3-5-haiku*': { input: 0.8, cachedInput: 0.08, cacheWriteInput: 1, output: 4, maxOutput: 8_192, contextWindow: 200_000 },
    'claude-3-haiku-20240307': { input: 0.25, cachedInput: 0.03, cacheWriteInput: 0.3, output: 1.25, maxOutput: 4_096, contextWindow: 200_000 },
  },
} satisfies ProviderPlugin;
