// Tavily, a search API built for agents: https://docs.tavily.com/documentation/api-reference. A tool API (kind 'tool').
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'tavily',
  kind: 'tool',
  name: 'Tavily',
  sdk: [
    {
      name: 'curl or any HTTP client', code: 'curl -H "Authorization: Bearer {token}" -H "Content-Type: application/json" -d \'{"query": "…"}\' {proxy}/search',
      note: 'A Tavily SDK works where it takes a base URL: the proxy URL as its base and the token as its API key.',
    },
  ],
  upstream: 'https://api.tavily.com',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from app.tavily.com. It starts with tvly-.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  routes: [
    { method: 'POST', path: 'search' },
    { method: 'POST', path: 'extract' },
    { method: 'POST', path: 'crawl' },
    { method: 'POST', path: 'map' },
    // The key's credit balance is the account's.
    { method: 'GET', path: 'usage', account: true },
  ],
} satisfies ProviderPlugin;
