// Groq: https://console.groq.com/docs/api-reference. SDK base URL: <gateway>/v1/proxy/openai/v1
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'groq',
  name: 'Groq',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [
    { name: 'Groq SDKs (Python, TypeScript)', env: { GROQ_BASE_URL: '{proxy}', GROQ_API_KEY: '{token}' } },
    { name: 'OpenAI SDKs (Python, Node, …)', env: { OPENAI_BASE_URL: '{proxy}/openai/v1', OPENAI_API_KEY: '{token}' } },
  ],
  upstream: 'https://api.groq.com',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from console.groq.com, API keys. It starts with gsk_.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // No account-wide route (batches, files) is listed; Groq's responses are not stored.
  routes: [
    { method: 'POST', path: 'openai/v1/chat/completions' },
    { method: 'POST', path: 'openai/v1/responses' },
    { method: 'POST', path: 'openai/v1/embeddings' },
    { method: 'POST', path: 'openai/v1/audio/transcriptions' },
    { method: 'POST', path: 'openai/v1/audio/translations' },
    { method: 'POST', path: 'openai/v1/audio/speech' },
    { method: 'GET', path: 'openai/v1/models' },
    { method: 'GET', path: 'openai/v1/models/{model}' },
  ],
  // Groq's `service_tier`: on-demand is the listed price; flex, performance and auto (which may run as flex) are not
  // priced here (refused under a cap, price_unknown).
  priceDimensions: {
    service_tier: { field: 'service_tier', values: { on_demand: 'standard' } },
    // Transcription and translation are billed per audio hour, speech per character: no price here.
    transcription: { routes: ['POST openai/v1/audio/transcriptions', 'POST openai/v1/audio/translations'], present: 'transcription' },
    speech: { routes: ['POST openai/v1/audio/speech'], present: 'speech' },
  },
} satisfies ProviderPlugin;
