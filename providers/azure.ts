// Azure OpenAI: https://learn.microsoft.com/azure/ai-services/openai/reference. The credential is the
// resource name (its `https://{resource}.openai.azure.com` endpoint) and one of its keys, sent as `api-key`;
// or, with no secret at all, `federated` with the Entra app (`tenant_id`, `client_id`) whose federated
// credential trusts Keyward's OIDC identity for the organisation: Keyward's JWT is the client assertion of
// a client-credentials grant and the Entra token goes as Bearer (signers/entra-assertion.ts, docs/operate/identity.md).
// SDK: `new AzureOpenAI({ endpoint: <gateway>/v1/proxy, apiKey: 'ptok_…', apiVersion, deployment })`
// (environment: AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_KEY), or the plain `OpenAI` client with
// `baseURL: <gateway>/v1/proxy/openai/v1/` on the version-less surface.
import type { ProviderPlugin } from '@keyward/sdk';
import { openAIRealtime } from './lib/realtime/openai-realtime.js';

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** A tenant id, or one of its verified domain names (contoso.onmicrosoft.com). */
const GUID_OR_DOMAIN = /^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63})$/;

// Stored responses (and their input items) are readable, cancellable and deletable by id by anyone
// holding a key of the resource: `account`. Creating one is every chat's path.
const storedResponses = (base: string) => [
  { method: 'GET', path: `${base}/responses/{id}`, account: true },
  { method: 'DELETE', path: `${base}/responses/{id}`, account: true },
  { method: 'POST', path: `${base}/responses/{id}/cancel`, account: true },
  { method: 'GET', path: `${base}/responses/{id}/input_items`, account: true },
] as const;

export default {
  apiVersion: 1,
  id: 'azure',
  name: 'Azure OpenAI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [
    {
      name: "openai's AzureOpenAI client", env: { AZURE_OPENAI_ENDPOINT: '{proxy}', AZURE_OPENAI_API_KEY: '{token}' },
      note: 'Give the API version (OPENAI_API_VERSION) and the deployment as usual.',
    },
    { name: 'OpenAI SDKs on the version-less v1 surface', env: { OPENAI_BASE_URL: '{proxy}/openai/v1', OPENAI_API_KEY: '{token}' } },
  ],
  upstream: 'https://{resource}.openai.azure.com',
  credential: {
    fields: {
      api_key: {
        secret: true, main: true, optional: true, description: 'One of the resource\'s two keys (Keys and Endpoint)',
        label: 'API key', help: 'One of the two keys under Keys and Endpoint of your Azure OpenAI resource (leave it empty for a federated credential).',
      },
      // One DNS label: the template keeps its host, so no value can point the key at another origin.
      resource: {
        pattern: /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/,
        maxLength: 63,
        description: 'The Azure OpenAI resource name: the `my-res` of https://my-res.openai.azure.com',
        label: 'Resource name',
        help: 'The my-res part of your endpoint https://my-res.openai.azure.com.',
      },
      tenant_id: {
        optional: true, pattern: GUID_OR_DOMAIN, maxLength: 253, description: 'With `federated`: the Entra tenant (directory) id of the app',
        label: 'Tenant ID', help: 'Federated only: the Entra directory (tenant) id of the app that trusts this gateway.',
      },
      client_id: {
        optional: true, pattern: GUID, maxLength: 36, description: 'With `federated`: the Entra app\'s application (client) id, which holds a federated credential for Keyward',
        label: 'Client ID', help: 'Federated only: the application (client) id of that Entra app.',
      },
      federated: {
        optional: true, flag: true, description: '"true": no stored key; Keyward signs in as the Entra app with its own OIDC token for the organisation',
        label: 'Federated (no stored key)', help: 'Choose this to sign in as the Entra app with this gateway\'s identity for your organisation instead of storing a key.',
      },
    },
    check({ secrets, plain }) {
      if (plain.federated !== undefined) {
        if (secrets.api_key !== undefined) return { field: 'api_key', message: 'A federated credential holds no key: give `resource`, `tenant_id`, `client_id` and `federated: true`.' };
        for (const field of ['tenant_id', 'client_id']) {
          if (plain[field] === undefined) return { field, message: `\`${field}\` is required with \`federated\` (the Entra app that trusts this gateway for your organisation).` };
        }
        return undefined;
      }
      for (const field of ['tenant_id', 'client_id']) {
        if (plain[field] !== undefined) return { field, message: `\`${field}\` goes with \`federated: true\`.` };
      }
      return secrets.api_key === undefined ? { field: 'api_key', message: '`api_key` is required (or `federated: true` with `tenant_id` and `client_id`).' } : undefined;
    },
  },
  // `api-key: <key>`, or a federated credential's Entra token as Bearer.
  auth: { kind: 'signer', signer: 'entra-assertion' },
  // AzureOpenAI sends `api-key`; with `azureADTokenProvider`, and the plain OpenAI client on openai/v1/, Bearer.
  // A browser's OpenAIRealtimeWebSocket.azure(...) cannot set headers: it puts the key in `?api-key=`.
  tokenIn: [{ header: 'api-key' }, { header: 'authorization', scheme: 'Bearer' }, { query: 'api-key' }],
  usage: 'openai',
  // `api-version` (a query parameter every AzureOpenAI call carries) is passed through as sent.
  // The deployment is what Azure runs (the body's `model` is ignored on that surface), so it is
  // the `{model}` a token's `models` scope is checked against. The SDK's responses.create goes
  // to openai/responses, not under a deployment; there and on openai/v1/ the body's `model`
  // names the deployment.
  routes: [
    { method: 'POST', path: 'openai/deployments/{model}/chat/completions' },
    { method: 'POST', path: 'openai/deployments/{model}/completions' },
    { method: 'POST', path: 'openai/deployments/{model}/embeddings' },
    { method: 'POST', path: 'openai/deployments/{model}/responses' },
    { method: 'POST', path: 'openai/responses' },
    ...storedResponses('openai'),
    { method: 'POST', path: 'openai/v1/chat/completions' },
    { method: 'POST', path: 'openai/v1/responses' },
    ...storedResponses('openai/v1'),
    { method: 'POST', path: 'openai/v1/embeddings' },
    { method: 'GET', path: 'openai/v1/models' },
    // Realtime sessions over WebSocket (docs/agents/realtime.md): the deployment (or the v1 surface's model) names the model.
    // Input audio is billed as OpenAI bills it (1 token per 100 ms), bounded at twice that as in providers/openai.ts.
    { method: 'GET', path: 'openai/realtime', websocket: { protocol: openAIRealtime, modelQuery: 'deployment', inputAudioTokensPerSecond: 20 } },
    { method: 'GET', path: 'openai/v1/realtime', websocket: { protocol: openAIRealtime, modelQuery: 'model', inputAudioTokensPerSecond: 20 } },
  ],
  // No price table: the model a request names is the operator's own deployment name, and its price depends on the
  // deployment type (global, data zone, regional, provisioned). Price your deployments in KEYWARD_PRICES, e.g.
  // `{ "azure": { "gpt-4o-prod": { "input": 2.5, "cachedInput": 1.25, "output": 10 } } }`, or `"*"` for all of them.
  // Azure OpenAI takes OpenAI's request fields: a `service_tier` other than the standard one has no price here (a
  // deployment's price is the operator's, in KEYWARD_PRICES, tiers included).
  priceDimensions: {
    service_tier: { field: 'service_tier', reported: 'service_tier', values: { auto: 'standard', default: 'standard' } },
    audio_output: { field: 'audio', present: 'audio', description: 'audio output (chat completions `audio`)' },
  },
} satisfies ProviderPlugin;
