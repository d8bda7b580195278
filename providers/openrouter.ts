// OpenRouter: https://openrouter.ai/docs/api-reference. SDK base URL: <gateway>/v1/proxy/api/v1
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'openrouter',
  name: 'OpenRouter',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}/api/v1', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://openrouter.ai',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from openrouter.ai, Keys. It starts with sk-or-.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // `key` shows the key's credit and limits; `generation?id=` any generation's cost and metadata on
  // the account: both `account`.
  routes: [
    { method: 'POST', path: 'api/v1/chat/completions' },
    { method: 'POST', path: 'api/v1/completions' },
    { method: 'POST', path: 'api/v1/responses' },
    { method: 'POST', path: 'api/v1/embeddings' },
    { method: 'GET', path: 'api/v1/models' },
    { method: 'GET', path: 'api/v1/generation', account: true },
    { method: 'GET', path: 'api/v1/key', account: true },
  ],
  // OpenRouter bills the underlying provider's list price: USD per million tokens as each model's page on
  // https://openrouter.ai/models showed it, as of `pricesAsOf`; operators override or extend them with KEYWARD_PRICES
  // (open-weight models are routed to hosts with different prices, so only first-party models are listed here).
  // Exact names: variants (`:online` adds web-search fees, `:free`, `:thinking`) are unpriced unless added.
  // Checked again on 2026-11-25: two of today's models confirmed at their vendors' prices on OpenRouter (listed first);
  // the rest stands as dated. A model released since is unpriced (refused under a budget) until KEYWARD_PRICES prices
  // it or KEYWARD_UNPRICED=family_max bounds it by its family (docs/operate/providers.md, "Prices that keep up").
  pricesAsOf: '2025-11-24',
  prices: {
    'openai/gpt-6.1-terra': { input: 1, cachedInput: 0.05, output: 5, longContext: { aboveInputTokens: 272_000, input: 2, cachedInput: 0.1, output: 7.5 } },
    'google/gemini-3.1-pro-preview': { input: 2, output: 12, longContext: { aboveInputTokens: 200_000, input: 4, output: 18 } },
    'openai/gpt-5': { input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 128_000, contextWindow: 400_000 },
    'openai/gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2, maxOutput: 128_000, contextWindow: 400_000 },
    'openai/gpt-4.1': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 32_768, contextWindow: 1_047_576 },
    'openai/gpt-4o': { input: 2.5, cachedInput: 1.25, output: 10, maxOutput: 16_384, contextWindow: 128_000 },
    'openai/gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6, maxOutput: 16_384, contextWindow: 128_000 },
    'anthropic/claude-opus-4.5': { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25, maxOutput: 64_000, contextWindow: 200_000 },
    'anthropic/claude-sonnet-4.5': {
      input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 64_000, contextWindow: 1_000_000,
      longContext: { aboveInputTokens: 200_000, input: 6, cachedInput: 0.6, cacheWriteInput: 7.5, output: 22.5 },
    },
    'anthropic/claude-haiku-4.5': { input: 1, cachedInput: 0.1, cacheWriteInput: 1.25, output: 5, maxOutput: 64_000, contextWindow: 200_000 },
    'anthropic/claude-opus-4.1': { input: 15, cachedInput: 1.5, cacheWriteInput: 18.75, output: 75, maxOutput: 32_000, contextWindow: 200_000 },
    'anthropic/claude-sonnet-4': {
      input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 64_000, contextWindow: 1_000_000,
      longContext: { aboveInputTokens: 200_000, input: 6, cachedInput: 0.6, cacheWriteInput: 7.5, output: 22.5 },
    },
    'google/gemini-2.5-pro': {
      input: 1.25, output: 10, maxOutput: 65_536, contextWindow: 1_048_576,
      longContext: { aboveInputTokens: 200_000, input: 2.5, output: 15 },
    },
    'google/gemini-2.5-flash': { input: 0.3, output: 2.5, maxOutput: 65_536, contextWindow: 1_048_576 },
    'x-ai/grok-4': { input: 3, cachedInput: 0.75, output: 15, contextWindow: 256_000, longContext: { aboveInputTokens: 128_000, input: 6, output: 30 } },
  },
} satisfies ProviderPlugin;
