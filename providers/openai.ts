// OpenAI: https://platform.openai.com/docs/api-reference. SDK base URL: <gateway>/v1/proxy/v1
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'openai',
  name: 'OpenAI',
  upstream: 'https://api.openai.com',
  credential: {
    fields: {
      api_key: { secret: true, main: true },
      // Which organisation and project a multi-org key acts for: the organisation's choice, never the caller's.
      organization: { optional: true, header: 'openai-organization', description: 'OpenAI organisation id, org-…' },
      project: { optional: true, header: 'openai-project', description: 'OpenAI project id, proj_…' },
    },
  },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // Stored responses (and their input items) are readable, cancellable and deletable by id by anyone on
  // the project: `account`. POST v1/responses may store one (`store`), but creating is every chat's path.
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/completions' },
    { method: 'POST', path: 'v1/responses' },
    { method: 'GET', path: 'v1/responses/{id}', account: true },
    { method: 'DELETE', path: 'v1/responses/{id}', account: true },
    { method: 'POST', path: 'v1/responses/{id}/cancel', account: true },
    { method: 'GET', path: 'v1/responses/{id}/input_items', account: true },
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
