// Anthropic: https://docs.anthropic.com/en/api. SDK base URL: <gateway>/v1/proxy
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'anthropic',
  name: 'Anthropic',
  upstream: 'https://api.anthropic.com',
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
} satisfies ProviderPlugin;
