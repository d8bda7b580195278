// OpenAI: https://platform.openai.com/docs/api-reference. SDK base URL: <gateway>/v1/proxy/v1
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'openai',
  name: 'OpenAI',
  upstream: 'https://api.openai.com',
  credential: {
    fields: {
      api_key: { secret: true, main: true },
      // Which organisation and project a multi-org key acts for: the organisation's choice, never the caller's.
      organization: { optional: true, header: 'openai-organization', description: 'OpenAI organisation id, org-…' },
      project: { optional: true, header: 'openai-project', description: 'OpenAI project id, proj_…' },
    },
  },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // Stored responses (and their input items) are readable, cancellable and deletable by id by anyone on
  // the project: `account`. POST v1/responses may store one (`store`), but creating is every chat's path.
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/completions' },
    { method: 'POST', path: 'v1/responses' },
    { method: 'GET', path: 'v1/responses/{id}', account: true },
    { method: 'DELETE', path: 'v1/responses/{id}', account: true },
    { method: 'POST', path: 'v1/responses/{id}/cancel', account: true },
    { method: 'GET', path: 'v1/responses/{id}/input_items', account: true },
    { method: 'POST', path: 'v1/responses/input_tokens' },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'POST', path: 'v1/moderations' },
    { method: 'POST', path: 'v1/images/generations' },
    { method: 'POST', path: 'v1/audio/speech' },
    { method: 'POST', path: 'v1/audio/transcriptions' },
    { method: 'POST', path: 'v1/audio/translations' },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'v1/models/{model}' },
  ],
  // List prices (Standard tier) in USD per million tokens from https://platform.openai.com/docs/pricing, and each model's
  // page for context and output limits, as of `pricesAsOf`; operators override or extend them with KEYWARD_PRICES.
  // Exact names and their dated snapshots (`gpt-5-2025-*`): a prefix as short as `gpt-4o*` would also price the
  // audio, realtime and search variants, which cost more. `service_tier: "priority"` (billed higher) and the
  // Responses API's built-in tools (billed per call) are not modelled. Embeddings have no output.
  // Built-in tools OpenAI runs and bills beyond the visible input (https://platform.openai.com/docs/pricing#built-in-tools):
  // their results come back as input tokens, so a budget reserves the context window for input, plus per call: web search
  // up to $25 per 1,000 calls (the preview's price, the highest), file search $2.50 per 1,000, code interpreter $0.03 per
  // container; the Responses API's `max_tool_calls` bounds the calls. Chat Completions' search models (`web_search_options`)
  // search as often as they choose, and image generation is billed per image: neither is bounded (refused under a budget).
  tools: {
    web_search: { match: { toolType: ['web_search*'] }, perUse: 0.025, uses: { field: 'max_tool_calls' } },
    file_search: { match: { toolType: ['file_search'], toolKey: ['vector_store_ids'] }, perUse: 0.0025, uses: { field: 'max_tool_calls' } },
    code_interpreter: { match: { toolType: ['code_interpreter'] }, perUse: 0.03, uses: { field: 'max_tool_calls' } },
    mcp: { match: { toolType: ['mcp'] } },
    image_generation: { match: { toolType: ['image_generation'] }, unbounded: true },
    chat_web_search: { match: { field: ['web_search_options'] }, unbounded: true },
  },
  pricesAsOf: '2025-11-13',
  prices: {
    'gpt-5.1': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5.1-2025-*': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-2025-*': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-mini-2025-*': { input: 0.25, cachedInput: 0.025, output: 2, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-nano': { input: 0.05, cachedInput: 0.005, output: 0.4, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-nano-2025-*': { input: 0.05, cachedInput: 0.005, output: 0.4, maxOutput: 128_000, contextWindow: 400_000 },
    'gpt-5-chat-latest': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4.1': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-2025-*': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-mini': { input: 0.4, cachedInput: 0.1, output: 1.6, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-mini-2025-*': { input: 0.4, cachedInput: 0.1, output: 1.6, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-nano': { input: 0.1, cachedInput: 0.025, output: 0.4, maxOutput: 32_768, contextWindow: 1_047_576 },
    'gpt-4.1-nano-2025-*': { input: 0.1, cachedInput: 0.025, output: 0.4, maxOutput: 32_768, contextWindow: 1_047_576 },
    // gpt-4o-2024-05-13 was priced higher ($5 / $15): the later snapshots only.
    'gpt-4o': { input: 2.5, cachedInput: 1.25, output: 10, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4o-2024-08-06': { input: 2.5, cachedInput: 1.25, output: 10, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4o-2024-11-20': { input: 2.5, cachedInput: 1.25, output: 10, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6, maxOutput: 16_384, contextWindow: 128_000 },
    'gpt-4o-mini-2024-07-18': { input: 0.15, cachedInput: 0.075, output: 0.6, maxOutput: 16_384, contextWindow: 128_000 },
    'o3': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-2025-*': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-pro': { input: 20, output: 80, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-pro-2025-*': { input: 20, output: 80, maxOutput: 100_000, contextWindow: 200_000 },
    'o4-mini': { input: 1.1, cachedInput: 0.275, output: 4.4, maxOutput: 100_000, contextWindow: 200_000 },
    'o4-mini-2025-*': { input: 1.1, cachedInput: 0.275, output: 4.4, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-mini': { input: 1.1, cachedInput: 0.55, output: 4.4, maxOutput: 100_000, contextWindow: 200_000 },
    'o3-mini-2025-*': { input: 1.1, cachedInput: 0.55, output: 4.4, maxOutput: 100_000, contextWindow: 200_000 },
    'o1': { input: 15, cachedInput: 7.5, output: 60, maxOutput: 100_000, contextWindow: 200_000 },
    'o1-2024-12-17': { input: 15, cachedInput: 7.5, output: 60, maxOutput: 100_000, contextWindow: 200_000 },
    'text-embedding-3-small': { input: 0.02, output: 0, contextWindow: 8_191 },
    'text-embedding-3-large': { input: 0.13, output: 0, contextWindow: 8_191 },
    'text-embedding-ada-002': { input: 0.1, output: 0, contextWindow: 8_191 },
  },
} satisfies ProviderPlugin;
