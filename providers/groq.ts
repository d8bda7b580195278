// Groq: https://console.groq.com/docs/api-reference. SDK base URL: <gateway>/v1/proxy/openai/v1
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'groq',
  name: 'Groq',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [
    { name: 'Groq SDKs (Python, TypeScript)', env: { GROQ_BASE_URL: '{proxy}', GROQ_API_KEY: '{token}' } },
    { name: 'OpenAI SDKs (Python, Node, …)', env: { OPENAI_BASE_URL: '{proxy}/openai/v1', OPENAI_API_KEY: '{token}' } },
  ],
  upstream: 'https://api.groq.com',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from console.groq.com, API keys. It starts with gsk_.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // No account-wide route (batches, files) is listed; Groq's responses are not stored.
  routes: [
    { method: 'POST', path: 'openai/v1/chat/completions' },
    { method: 'POST', path: 'openai/v1/responses' },
    { method: 'POST', path: 'openai/v1/embeddings' },
    { method: 'POST', path: 'openai/v1/audio/transcriptions' },
    { method: 'POST', path: 'openai/v1/audio/translations' },
    { method: 'POST', path: 'openai/v1/audio/speech' },
    { method: 'GET', path: 'openai/v1/models' },
    { method: 'GET', path: 'openai/v1/models/{model}' },
  ],
  // On-demand list prices in USD per million tokens from https://groq.com/pricing (and the models page for limits),
  // as of `pricesAsOf`; operators override or extend them with KEYWARD_PRICES. Cached input (where Groq discounts
  // it) is priced as input here: never below the bill.
  // Checked again on 2026-11-25: no current list price page we could read confirms this table's models or their
  // successors, so it stands as dated; a model released since is unpriced (refused under a budget) until
  // KEYWARD_PRICES prices it or KEYWARD_UNPRICED=family_max bounds it by its family (docs/operate/providers.md, "Prices that keep up").
  pricesAsOf: '2025-09-05',
  prices: {
    'llama-3.3-70b-versatile': { input: 0.59, output: 0.79, maxOutput: 32_768, contextWindow: 131_072 },
    'llama-3.1-8b-instant': { input: 0.05, output: 0.08, maxOutput: 131_072, contextWindow: 131_072 },
    'openai/gpt-oss-120b': { input: 0.15, output: 0.75, maxOutput: 65_536, contextWindow: 131_072 },
    'openai/gpt-oss-20b': { input: 0.1, output: 0.5, maxOutput: 65_536, contextWindow: 131_072 },
    'moonshotai/kimi-k2-instruct*': { input: 1, output: 3, maxOutput: 16_384, contextWindow: 262_144 },
    'meta-llama/llama-4-scout-17b-16e-instruct': { input: 0.11, output: 0.34, maxOutput: 8_192, contextWindow: 131_072 },
    'meta-llama/llama-4-maverick-17b-128e-instruct': { input: 0.2, output: 0.6, maxOutput: 8_192, contextWindow: 131_072 },
    'qwen/qwen3-32b': { input: 0.29, output: 0.59, maxOutput: 40_960, contextWindow: 131_072 },
  },
} satisfies ProviderPlugin;
