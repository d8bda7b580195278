// A Gemini-shaped test provider with prices (plain ESM, copied into KEYWARD_PROVIDERS_DIR by the
// budget tests): the model is a path segment, usage is Gemini's usageMetadata. Prices are made up.
export default {
  apiVersion: 1,
  id: 'pricedgem',
  name: 'Priced Gemini (test)',
  upstream: 'https://gem.priced.test',
  auth: { kind: 'header', header: 'x-goog-api-key' },
  tokenIn: [{ header: 'x-goog-api-key' }],
  usage: 'gemini',
  routes: [
    { method: 'POST', path: 'v1beta/models/{model}:generateContent' },
    { method: 'POST', path: 'v1beta/models/{model}:streamGenerateContent' },
  ],
  prices: { 'gem-1*': { input: 1, output: 4, maxOutput: 8192, contextWindow: 1000000 } },
  pricesAsOf: '2026-11-01',
  pricesSource: 'https://prices.example/test',
};
