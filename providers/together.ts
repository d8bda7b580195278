// Together AI: https://docs.together.ai/reference
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'together',
  name: 'Together AI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}/v1', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://api.together.xyz',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from api.together.ai, Settings, API keys.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // No account-wide route (files, fine-tunes, batches, endpoints) is listed.
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/completions' },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'POST', path: 'v1/images/generations' },
    { method: 'POST', path: 'v1/rerank' },
    { method: 'POST', path: 'v1/audio/speech' },
    { method: 'POST', path: 'v1/audio/transcriptions' },
    { method: 'GET', path: 'v1/models' },
  ],
  // Images, speech, transcription and rerank are billed otherwise than by tokens and have no price here: refused under a
  // cap (price_unknown).
  priceDimensions: {
    images: { routes: ['POST v1/images/generations'], present: 'image' },
    speech: { routes: ['POST v1/audio/speech'], present: 'speech' },
    transcription: { routes: ['POST v1/audio/transcriptions'], present: 'transcription' },
    rerank: { routes: ['POST v1/rerank'], present: 'rerank' },
  },
} satisfies ProviderPlugin;
