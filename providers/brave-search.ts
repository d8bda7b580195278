// Brave Search API: https://api-dashboard.search.brave.com/app/documentation. A tool API (kind 'tool').
// KEYWARD_UPSTREAM_BRAVE_SEARCH overrides its origin (a `-` in an id is `_` in the variable).
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'brave-search',
  kind: 'tool',
  name: 'Brave Search',
  sdk: [{ name: 'curl or any HTTP client', code: 'curl -H "X-Subscription-Token: {token}" "{proxy}/res/v1/web/search?q=keyward"' }],
  upstream: 'https://api.search.brave.com',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A subscription token from api-dashboard.search.brave.com, API keys. It starts with BSA.' } } },
  auth: { kind: 'header', header: 'x-subscription-token' },
  routes: ['web', 'news', 'images', 'videos', 'suggest', 'spellcheck', 'summarizer'].map((s) => ({ method: 'GET' as const, path: `res/v1/${s}/search` }))
    .concat([{ method: 'GET', path: 'res/v1/local/pois' }, { method: 'GET', path: 'res/v1/local/descriptions' }]),
} satisfies ProviderPlugin;
