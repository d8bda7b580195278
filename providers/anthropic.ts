// Anthropic: https://docs.anthropic.com/en/api. SDK base URL: <gateway>/v1/proxy
import type { ModelPrice, ProviderPlugin } from '../src/catalog/provider.js';

/** A model id and its dated snapshots (`<id>-20…`) at one price. */
const claude = (id: string, price: ModelPrice): Record<string, ModelPrice> => ({ [id]: price, [`${id}-20*`]: price });
/** Sonnet 4 and 4.5: up to 1M input tokens; past 200k the whole request costs twice the input and 1.5x the output. */
const sonnet4: ModelPrice = {
  input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 64_000, contextWindow: 1_000_000,
  longContext: { aboveInputTokens: 200_000, input: 6, cachedInput: 0.6, cacheWriteInput: 7.5, output: 22.5 },
};

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
  // List prices in USD per million tokens from https://platform.claude.com/docs/en/about-claude/pricing and each
  // model's overview page (output and context limits), as of `pricesAsOf`; operators override or extend them with
  // KEYWARD_PRICES. Cache writes are priced at the 5-minute TTL's rate (a 1-hour write costs more, which this table
  // cannot tell apart: set cacheWriteInput to the 1-hour rate in KEYWARD_PRICES if you use 1-hour caching). A model
  // id is listed exactly, with its dated snapshots (`-20…*`): a bare prefix such as `claude-opus-5*` would also price
  // a later `claude-opus-5-7` at Opus 5's price. Sonnet 4 and 4.5 bill a request past 200k input tokens at their
  // long-context prices, Haiku 5.5 one past 100k (prompt = input + cache reads + writes). Batch (50% off), fast mode
  // and the US-only inference premium are not modelled.
  // Not confirmed where we read (so left as bounds, never guessed lower): Fable 5.2's cache prices (cache reads are
  // charged as input, cache writes at 2x input, the 1-hour rate of every other model); Opus 4.8's limits (a budgeted
  // request must name max_tokens). Claude Code 2.1.332 asks for claude-opus-5-5 by default.
  pricesAsOf: '2026-11-25',
  prices: {
    ...claude('claude-fable-5-2', { input: 8, cacheWriteInput: 16, output: 40, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-fable-5-1', { input: 10, cachedInput: 0.25, cacheWriteInput: 12.5, output: 50, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-mythos-5-1', { input: 10, cachedInput: 0.25, cacheWriteInput: 12.5, output: 50, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-fable-5', { input: 10, cachedInput: 1, cacheWriteInput: 12.5, output: 50, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-mythos-5', { input: 10, cachedInput: 1, cacheWriteInput: 12.5, output: 50, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-opus-5-5', { input: 4, cachedInput: 0.2, cacheWriteInput: 5, output: 20, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-opus-5', { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-opus-4-8', { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25 }),
    ...claude('claude-opus-4-7', { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-opus-4-6', { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-opus-4-5', { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25, maxOutput: 64_000, contextWindow: 200_000 }),
    'claude-opus-4-1*': { input: 15, cachedInput: 1.5, cacheWriteInput: 18.75, output: 75, maxOutput: 32_000, contextWindow: 200_000 },
    'claude-opus-4-0': { input: 15, cachedInput: 1.5, cacheWriteInput: 18.75, output: 75, maxOutput: 32_000, contextWindow: 200_000 },
    'claude-opus-4-2025*': { input: 15, cachedInput: 1.5, cacheWriteInput: 18.75, output: 75, maxOutput: 32_000, contextWindow: 200_000 },
    // Sonnet 5.5's cache reads went from $0.20 to $0.10 on 2026-10-07.
    ...claude('claude-sonnet-5-5', { input: 2, cachedInput: 0.1, cacheWriteInput: 2.5, output: 10, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-sonnet-5', { input: 2, cachedInput: 0.2, cacheWriteInput: 2.5, output: 10, maxOutput: 128_000, contextWindow: 1_000_000 }),
    ...claude('claude-sonnet-4-6', { input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 64_000, contextWindow: 1_000_000 }),
    'claude-sonnet-4-5*': { ...sonnet4 },
    'claude-sonnet-4-0': { ...sonnet4 },
    'claude-sonnet-4-2025*': { ...sonnet4 },
    ...claude('claude-haiku-5-5', {
      input: 0.1, cachedInput: 0.01, cacheWriteInput: 0.125, output: 0.5, maxOutput: 128_000, contextWindow: 1_000_000,
      longContext: { aboveInputTokens: 100_000, input: 0.5, cachedInput: 0.05, cacheWriteInput: 0.625, output: 2.5 },
    }),
    'claude-haiku-4-5*': { input: 1, cachedInput: 0.1, cacheWriteInput: 1.25, output: 5, maxOutput: 64_000, contextWindow: 200_000 },
    // 64k output, 128k with the output-128k beta header: the larger is the bound.
    'claude-3-7-sonnet*': { input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 128_000, contextWindow: 200_000 },
    'claude-3-5-haiku*': { input: 0.8, cachedInput: 0.08, cacheWriteInput: 1, output: 4, maxOutput: 8_192, contextWindow: 200_000 },
    'claude-3-haiku-20240307': { input: 0.25, cachedInput: 0.03, cacheWriteInput: 0.3, output: 1.25, maxOutput: 4_096, contextWindow: 200_000 },
  },
} satisfies ProviderPlugin;
