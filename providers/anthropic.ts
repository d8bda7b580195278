// Anthropic: https://docs.anthropic.com/en/api. SDK base URL: <gateway>/v1/proxy
import type { ProviderPlugin } from '../src/gateway/contracts.js';

export default {
  id: 'anthropic',
  name: 'Anthropic',
  upstream: 'https://api.anthropic.com',
  keyHeader: 'x-api-key',
  headers: { 'anthropic-version': '2023-06-01' },
  allow: [
    { method: 'POST', path: 'v1/messages' },
    { method: 'POST', path: 'v1/messages/count_tokens' },
    { method: 'POST', path: 'v1/messages/batches' },
    { method: 'GET', path: 'v1/messages/batches' },
    { method: 'GET', path: 'v1/messages/batches/{id}' },
    { method: 'GET', path: 'v1/messages/batches/{id}/results' },
    { method: 'POST', path: 'v1/messages/batches/{id}/cancel' },
    { method: 'DELETE', path: 'v1/messages/batches/{id}' },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'v1/models/{model}' },
  ],
} satisfies ProviderPlugin;
