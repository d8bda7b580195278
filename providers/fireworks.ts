// Fireworks AI: https://docs.fireworks.ai/api-reference. SDK base URL: <gateway>/v1/proxy/inference/v1
import type { ProviderPlugin } from '../src/catalog/provider.js';

export default {
  id: 'fireworks',
  name: 'Fireworks AI',
  upstream: 'https://api.fireworks.ai',
  keyHeader: 'authorization',
  // Inference only: no account-wide route (datasets, fine-tuning, deployments) is listed.
  allow: [
    { method: 'POST', path: 'inference/v1/chat/completions' },
    { method: 'POST', path: 'inference/v1/completions' },
    { method: 'POST', path: 'inference/v1/embeddings' },
    { method: 'POST', path: 'inference/v1/messages' },
    { method: 'GET', path: 'inference/v1/models' },
  ],
} satisfies ProviderPlugin;
