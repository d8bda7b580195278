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
  // List prices in USD per million tokens from https://docs.x.ai/docs/models, as of `pricesAsOf`; operators override or
  // extend them with KEYWARD_PRICES. Requests past 128k input tokens are billed at the higher-context prices
  // (`longContext`). Live Search sources and server-side tools are billed per use and not modelled here. Its chat
  // completions report reasoning beside completion_tokens (total_tokens holds it): the usage reader counts it as output.
  // The 2026 models as xAI's pages gave them on 2026-07-13 (`pricesAsOf`): Grok 4.5, its flagship (past 204,800 input
  // tokens a request costs twice: $4 in, $12 out), Grok 4.3, Grok 4.20 and Grok Build, and Grok 4.1 Fast. Not
  // confirmed, so left as bounds: their cached-input prices but Grok 4.5's (charged as input), their largest outputs
  // but Grok 4.1 Fast's (a budgeted request must name max_tokens), Grok 4.5's long-context cache price.
  pricesAsOf: '2026-07-13',
  prices: {
    'grok-4.5': { input: 2, cachedInput: 0.5, output: 6, contextWindow: 500_000, longContext: { aboveInputTokens: 204_800, input: 4, output: 12 } },
    'grok-4.3': { input: 1.25, output: 2.5, contextWindow: 1_000_000 },
    'grok-4.20-0309-reasoning': { input: 1.25, output: 2.5, contextWindow: 1_000_000 },
    'grok-4.20-0309-non-reasoning': { input: 1.25, output: 2.5, contextWindow: 1_000_000 },
    'grok-build-0.1': { input: 1, output: 2, contextWindow: 256_000 },
    'grok-4-1-fast-reasoning': { input: 0.2, output: 0.5, maxOutput: 30_000, contextWindow: 2_000_000 },
    'grok-4-1-fast-non-reasoning': { input: 0.2, output: 0.5, maxOutput: 30_000, contextWindow: 2_000_000 },
    'grok-4': { input: 3, cachedInput: 0.75, output: 15, contextWindow: 256_000, longContext: { aboveInputTokens: 128_000, input: 6, output: 30 } },
    'grok-4-0709': { input: 3, cachedInput: 0.75, output: 15, contextWindow: 256_000, longContext: { aboveInputTokens: 128_000, input: 6, output: 30 } },
    'grok-4-fast-reasoning': { input: 0.2, cachedInput: 0.05, output: 0.5, contextWindow: 2_000_000, longContext: { aboveInputTokens: 128_000, input: 0.4, output: 1 } },
    'grok-4-fast-non-reasoning': { input: 0.2, cachedInput: 0.05, output: 0.5, contextWindow: 2_000_000, longContext: { aboveInputTokens: 128_000, input: 0.4, output: 1 } },
    'grok-code-fast-1': { input: 0.2, cachedInput: 0.02, output: 1.5, contextWindow: 256_000 },
    'grok-3': { input: 3, cachedInput: 0.75, output: 15, contextWindow: 131_072 },
    'grok-3-mini': { input: 0.3, cachedInput: 0.075, output: 0.5, contextWindow: 131_072 },
  },
} satisfies ProviderPlugin;
