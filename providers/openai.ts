// OpenAI: https://platform.openai.com/docs/api-reference. SDK base URL: <gateway>/v1/proxy/v1
import type { ProviderPlugin } from '../src/gateway/contracts.js';

export default {
  id: 'openai',
  name: 'OpenAI',
  upstream: 'https://api.openai.com',
  keyHeader: 'authorization',
  allow: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/completions' },
    { method: 'POST', path: 'v1/responses' },
    { method: 'GET', path: 'v1/responses/{id}' },
    { method: 'DELETE', path: 'v1/responses/{id}' },
    { method: 'POST', path: 'v1/responses/{id}/cancel' },
    { method: 'GET', path: 'v1/responses/{id}/input_items' },
    { method: 'POST', path: 'v1/responses/input_tokens' },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'POST', path: 'v1/moderations' },
    { method: 'POST', path: 'v1/images/generations' },
    { method: 'POST', path: 'v1/audio/speech' },
    { method: 'POST', path: 'v1/audio/transcriptions' },
    { method: 'POST', path: 'v1/audio/translations' },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'v1/models/{model}' },
  ],
} satisfies ProviderPlugin;
