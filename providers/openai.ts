// OpenAI: https://platform.openai.com/docs/api-reference. SDK base URL: <gateway>/v1/proxy/v1
import type { ProviderPlugin } from '@keyward/sdk';
import { openAIRealtime } from './lib/realtime/openai-realtime.js';
import { openAIResponses } from './lib/realtime/openai-responses.js';

export default {
  apiVersion: 1,
  id: 'openai',
  name: 'OpenAI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}/v1', OPENAI_API_KEY: '{token}' } }],
  upstream: 'https://api.openai.com',
  credential: {
    fields: {
      api_key: { secret: true, main: true, label: 'API key', help: 'A secret key from platform.openai.com, API keys. It starts with sk-.' },
      // Which organisation and project a multi-org key acts for: the organisation's choice, never the caller's.
      organization: {
        optional: true, header: 'openai-organization', description: 'OpenAI organisation id, org-…',
        label: 'Organization ID', help: 'Only for a key that belongs to several organizations: the org-… id from your OpenAI settings.',
      },
      project: {
        optional: true, header: 'openai-project', description: 'OpenAI project id, proj_…',
        label: 'Project ID', help: 'Only to use one project of the key: the proj_… id from your OpenAI project settings.',
      },
    },
  },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <key>
  // Browsers cannot set headers on a WebSocket: OpenAIRealtimeWebSocket offers the key as a subprotocol.
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }, { header: 'sec-websocket-protocol', pattern: /(?:^|,)\s*openai-insecure-api-key\.([^\s,]+)/ }],
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
    // WebSocket sessions (docs/agents/realtime.md): the Realtime API, and the Responses API as Codex CLI opens it. User audio
    // is billed at 1 token per 100 ms (https://developers.openai.com/api/docs/guides/realtime-costs): bounded here at twice
    // that, the rate of assistant audio (1 per 50 ms), for the special tokens around it.
    { method: 'GET', path: 'v1/realtime', websocket: { protocol: openAIRealtime, modelQuery: 'model', inputAudioTokensPerSecond: 20 } },
    { method: 'GET', path: 'v1/responses', websocket: { protocol: openAIResponses } },
  ],
  // Built-in tools OpenAI runs and bills beyond the visible input (https://platform.openai.com/docs/pricing#built-in-tools):
  // their results come back as input tokens, so a budget reserves the context window for input, plus per call: web search
  // up to $25 per 1,000 calls (the preview's price, the highest), file search $2.50 per 1,000, code interpreter $0.03 per
  // container; the Responses API's `max_tool_calls` bounds the calls. Chat Completions' search models (`web_search_options`)
  // search as often as they choose, and image generation is billed per image: neither is bounded (refused under a budget).
  tools: {
    web_search: { match: { toolType: ['web_search*'] }, perUse: 0.025, uses: { field: 'max_tool_calls' } },
    file_search: { match: { toolType: ['file_search'], toolKey: ['vector_store_ids'] }, perUse: 0.0025, uses: { field: 'max_tool_calls' } },
    code_interpreter: { match: { toolType: ['code_interpreter'] }, perUse: 0.03, uses: { field: 'max_tool_calls' } },
    mcp: { match: { toolType: ['mcp'] } },
    image_generation: { match: { toolType: ['image_generation'] }, unbounded: true },
    chat_web_search: { match: { field: ['web_search_options'] }, unbounded: true },
  },
  // Every request field or mode that changes what OpenAI bills (https://developers.openai.com/api/docs/pricing): under a cap
  // a value with no price is refused (price_unknown). `service_tier`: Standard (`auto` and `default`, when the project's
  // default is Standard; the response reports the tier that served it and a dearer one is charged), Flex (half price
  // where listed), Priority (renamed Fast mode on 2026-07-30: `priority` or `fast`, each model's own price where listed);
  // Scale Tier is bought as capacity, with no price per token. Audio output (`audio`) is priced where the model has audio
  // prices; transcription, translation, speech and image routes have no price here. Batches (v1/batches) are not a route.
  priceDimensions: {
    service_tier: {
      field: 'service_tier', reported: 'service_tier',
      values: { auto: 'standard', default: 'standard', flex: 'flex', priority: 'priority', fast: 'priority', scale: 'scale' },
    },
    audio_output: { field: 'audio', present: 'audio', description: 'audio output (chat completions `audio`)' },
    transcription: { routes: ['POST v1/audio/transcriptions', 'POST v1/audio/translations'], present: 'transcription' },
    speech: { routes: ['POST v1/audio/speech'], present: 'speech' },
    images: { routes: ['POST v1/images/generations'], present: 'image' },
    tools: { pricedBy: 'tools', description: 'provider-side tools: `tools` above' },
    long_context: { pricedBy: 'longContext', description: 'a request past a long-context threshold, priced whole at its prices' },
  },
} satisfies ProviderPlugin;
