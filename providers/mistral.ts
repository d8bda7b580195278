// Mistral AI: https://docs.mistral.ai/api/
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'mistral',
  name: 'Mistral AI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'Mistral SDK (Python)', code: "Mistral(api_key='{token}', server_url='{proxy}')" }],
  upstream: 'https://api.mistral.ai',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from console.mistral.ai, API keys.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  // Agents are the workspace's stored objects (instructions, document libraries): running one by
  // `agent_id` reads what another member set up, so it is `account`.
  routes: [
    { method: 'POST', path: 'v1/chat/completions' },
    { method: 'POST', path: 'v1/fim/completions' },
    { method: 'POST', path: 'v1/agents/completions', account: true },
    { method: 'POST', path: 'v1/embeddings' },
    { method: 'POST', path: 'v1/moderations' },
    { method: 'POST', path: 'v1/chat/moderations' },
    { method: 'POST', path: 'v1/ocr' },
    { method: 'GET', path: 'v1/models' },
    { method: 'GET', path: 'v1/models/{model}' },
  ],
  // OCR is billed per page, which has no price here: refused under a cap (price_unknown).
  priceDimensions: {
    ocr: { routes: ['POST v1/ocr'], present: 'ocr' },
  },
} satisfies ProviderPlugin;
