// A test provider with a price table (plain ESM, copied into KEYWARD_PROVIDERS_DIR by the budget tests):
// OpenAI-shaped (chat completions, usage as OpenAI reports it), with models priced every way a budget
// must handle: a largest output and context window (pm-1), neither (pm-bare), a prefix (pm-wide-*),
// free output (emb-1). Prices are made up: USD per million tokens.
export default {
  apiVersion: 1,
  id: 'priced',
  name: 'Priced AI (test)',
  upstream: 'https://api.priced.test',
  auth: { kind: 'header', header: 'authorization' },
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'GET', path: 'v1/models' },
  ],
  prices: {
    'pm-1': { input: 2, cachedInput: 0.5, output: 8, maxOutput: 4096, contextWindow: 100000 },
    'pm-bare': { input: 1, output: 4 },
    'pm-wide-*': { input: 3, output: 15, maxOutput: 1000 },
    'emb-1': { input: 0.1, output: 0 },
  },
  pricesAsOf: '2026-11-01',
  pricesSource: 'https://prices.example/test',
};
