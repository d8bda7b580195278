// Perplexity: https://docs.perplexity.ai/api-reference
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'perplexity',
  name: 'Perplexity',
  upstream: 'https://api.perplexity.ai',
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // Async jobs are the account's: the list shows everyone's, and a result is readable by id.
  routes: [
    { method: 'POST', path: 'chat/completions' },
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'async/chat/completions', account: true },
    { method: 'GET', path: 'async/chat/completions', account: true },
    { method: 'GET', path: 'async/chat/completions/{id}', account: true },
    { method: 'POST', path: 'search' },
    { method: 'POST', path: 'v1/responses' },
  ],
} satisfies ProviderPlugin;
