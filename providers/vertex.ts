// Google Vertex AI: https://cloud.google.com/vertex-ai/docs/reference/rest. Gemini (generateContent and
// friends), partner models such as Anthropic's (rawPredict / streamRawPredict), and the OpenAI-compatible
// chat endpoint, under `v1/` and `v1beta1/` (@google/genai's default). Upstream it authenticates with an
// OAuth access token the gateway mints itself (the `google-oauth` signer): from the stored service-account
// key (JWT grant); with `ambient: "true"`, from the metadata server of the machine Keyward runs on; or, with
// `federated: "true"` and no secret at all, from Google STS in exchange for Keyward's own OIDC token for the
// organisation (a workload identity pool provider that trusts it), then optionally as a service account
// (iamcredentials generateAccessToken) — signers/google-sts.ts, docs/operate/identity.md.
// Clients: AnthropicVertex with baseURL `<gateway>/v1/proxy/v1` and an authClient sending `Bearer ptok_…`;
// GoogleGenAI `{vertexai:true, project, location, httpOptions:{baseUrl:'<gateway>/v1/proxy'}}` with an
// authClient, or `apiKey: 'ptok_…'` (sent as x-goog-api-key).
import type { CredentialSecrets, ProviderPlugin, ProviderRoute } from '@keyward/sdk';

const versions = ['v1', 'v1beta1'] as const;
const modelActions = ['generateContent', 'streamGenerateContent', 'countTokens', 'rawPredict', 'streamRawPredict'] as const;
const base = 'projects/{project}/locations/{location}';

/** A service-account key as Google issues it: the fields the JWT grant needs, or the problem. */
export function serviceAccountProblem(json: string): string | undefined {
  let sa: unknown;
  try {
    sa = JSON.parse(json);
  } catch {
    return '`service_account` must be the service account\'s JSON key file.';
  }
  const o = sa as Record<string, unknown>;
  if (!o || typeof o !== 'object' || Array.isArray(o)) return '`service_account` must be a JSON object.';
  if (o.type !== 'service_account') return '`service_account` must have "type": "service_account".';
  if (typeof o.client_email !== 'string' || !/^[^\s@]{1,100}@[A-Za-z0-9.-]{1,200}$/.test(o.client_email)) return '`service_account` needs a `client_email`.';
  if (typeof o.private_key_id !== 'string' || !/^[A-Za-z0-9_-]{1,100}$/.test(o.private_key_id)) return '`service_account` needs a `private_key_id`.';
  if (typeof o.private_key !== 'string' || !o.private_key.includes('-----BEGIN PRIVATE KEY-----')) return '`service_account` needs a PKCS#8 `private_key` (-----BEGIN PRIVATE KEY-----).';
  // Tokens are minted at Google's endpoint (or KEYWARD_GOOGLE_TOKEN_URI), never at a URL a key names.
  if (o.token_uri !== undefined && o.token_uri !== 'https://oauth2.googleapis.com/token') return '`service_account`\'s token_uri must be https://oauth2.googleapis.com/token.';
  return undefined;
}

/** `//iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>`. */
const WORKLOAD_IDENTITY_PROVIDER = /^\/\/iam\.googleapis\.com\/projects\/\d{1,20}\/locations\/global\/workloadIdentityPools\/[a-z0-9-]{4,32}\/providers\/[a-z0-9-]{4,32}$/;
/** A service account's email (the one a federated credential impersonates). */
const SERVICE_ACCOUNT_EMAIL = /^[a-z0-9][a-z0-9._-]{0,62}@[a-z0-9][a-z0-9.-]{0,200}\.gserviceaccount\.com$/;

/** A federated credential: the pool provider, and a service account's email if any; no secret. */
function federatedCheck(c: CredentialSecrets): { field: string; message: string } | undefined {
  if (c.plain.ambient !== undefined) return { field: 'ambient', message: 'Give either `ambient` or `federated`, not both.' };
  const secret = Object.keys(c.secrets)[0];
  if (secret !== undefined) return { field: secret, message: 'A federated credential holds no secret.' };
  if (c.plain.workload_identity_provider === undefined) {
    return { field: 'workload_identity_provider', message: '`workload_identity_provider` is required with `federated`: the pool provider that trusts this gateway for your organisation.' };
  }
  const sa = c.plain.service_account;
  if (sa !== undefined && !SERVICE_ACCOUNT_EMAIL.test(sa)) return { field: 'service_account', message: 'With `federated`, `service_account` is the email of the service account to impersonate (…@….iam.gserviceaccount.com).' };
  return undefined;
}

/** Either a stored service-account key, `ambient: "true"` (the gateway's own identity), or `federated: "true"`: exactly one. */
function check(c: CredentialSecrets): { field: string; message: string } | undefined {
  if (c.plain.federated !== undefined) return federatedCheck(c);
  if (c.plain.workload_identity_provider !== undefined) return { field: 'workload_identity_provider', message: '`workload_identity_provider` goes with `federated: true`.' };
  const key = c.secrets.service_account;
  const ambient = c.plain.ambient;
  if (key !== undefined && ambient !== undefined) return { field: 'ambient', message: 'Give either `service_account` or `ambient: "true"`, not both.' };
  if (key === undefined && ambient === undefined) {
    return { field: 'service_account', message: 'Give `service_account` (the JSON key), `ambient: "true"` to use the gateway\'s own Google identity, or `federated: "true"` with `workload_identity_provider`.' };
  }
  if (key !== undefined) {
    const problem = serviceAccountProblem(key);
    return problem ? { field: 'service_account', message: problem } : undefined;
  }
  return undefined;
}

const routes: ProviderRoute[] = versions.flatMap((v) => [
  // Anthropic's count_tokens on Vertex: a fixed "model" in the path, the real model in the body (read for the models scope).
  { method: 'POST' as const, path: `${v}/${base}/publishers/{publisher}/models/count-tokens:rawPredict` },
  ...modelActions.map((a) => ({ method: 'POST' as const, path: `${v}/${base}/publishers/{publisher}/models/{model}:${a}` })),
  { method: 'POST' as const, path: `${v}/${base}/endpoints/openapi/chat/completions` },
]);

export default {
  apiVersion: 1,
  id: 'vertex',
  name: 'Google Vertex AI',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [
    {
      name: '@google/genai (Vertex mode)',
      code: "new GoogleGenAI({ vertexai: true, project: '{project}', location: '{location}',\n  apiKey: '{token}', httpOptions: { baseUrl: '{proxy}', apiVersion: 'v1' } })",
      note: 'Neither Vertex SDK takes the token from the environment: it goes in the client options.',
    },
    {
      name: 'AnthropicVertex (@anthropic-ai/vertex-sdk)',
      code: "new AnthropicVertex({ baseURL: '{proxy}/v1', region: '{location}', projectId: '{project}',\n  authClient: { getRequestHeaders: async () => new Headers({ authorization: 'Bearer {token}' }) } })",
    },
  ],
  // Regional endpoints only: the `global` location lives on another host (aiplatform.googleapis.com), which
  // this template cannot express, so `location` refuses it.
  upstream: 'https://{location}-aiplatform.googleapis.com',
  credential: {
    fields: {
      service_account: {
        secret: true,
        main: true,
        optional: true,
        // A JSON key file (spaces and line breaks allowed; `check` parses it), or a federated credential's email.
        pattern: /^\s*\{[\s\S]*\}\s*$|^[^\s@]{1,100}@[A-Za-z0-9.-]{1,200}$/,
        maxLength: 16_384,
        plainWhenFederated: true,
        description: 'The service account\'s JSON key (type service_account; its token_uri is not used: tokens come from https://oauth2.googleapis.com/token), or with `federated` the email of the service account to impersonate (then shown)',
        label: 'Service account key (JSON)',
        help: 'The JSON key file of a service account allowed to call Vertex AI. Empty: the gateway\'s own identity. Federated: optionally the email of a service account to impersonate.',
      },
      project: {
        pattern: /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, pinsPath: true, description: 'Google Cloud project id: the only project a request\'s path may name',
        label: 'Project ID', help: 'The Google Cloud project id, such as my-proj. Requests may use only this project.',
      },
      location: {
        pattern: /^[a-z]+-[a-z]+\d+$/, pinsPath: true, description: 'Vertex region, e.g. us-central1 (global is not supported): the only location a request\'s path may name',
        label: 'Region', help: 'The Vertex AI region, such as us-central1 (global is not supported).',
      },
      // Fields are strings: a flag is the string "true".
      ambient: {
        optional: true, flag: true, description: '"true": use the gateway\'s own Google identity (metadata server) instead of a stored key',
        label: 'Use the gateway\'s identity', help: 'Choose this to call Vertex AI as the gateway itself, with no stored key (only in projects the operator allows).',
      },
      workload_identity_provider: {
        optional: true,
        pattern: WORKLOAD_IDENTITY_PROVIDER,
        maxLength: 200,
        description: 'With `federated`: the workload identity pool provider\'s full name, //iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>',
        label: 'Workload identity provider', help: 'Federated only: the full name of the pool provider that trusts this gateway, //iam.googleapis.com/projects/…/providers/….',
      },
      federated: {
        optional: true, flag: true, description: '"true": no stored key; Google STS exchanges Keyward\'s own OIDC token for the organisation',
        label: 'Federated (no stored key)', help: 'Choose this to exchange this gateway\'s identity for your organisation at Google instead of storing a key.',
      },
    },
    check,
  },
  auth: { kind: 'signer', signer: 'google-oauth' },
  // Bearer from AnthropicVertex / GoogleGenAI authClient / OpenAI; x-goog-api-key from GoogleGenAI's apiKey; `key`/`access_token` query forms are credentials too.
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }, { header: 'x-goog-api-key' }, { query: 'key' }, { query: 'access_token' }],
  // By path: Anthropic's usage on publishers/anthropic (its input_tokens leave out cache reads and writes), OpenAI's
  // on the OpenAI-compatible endpoint, Gemini's usageMetadata otherwise.
  usage: 'vertex',
  routes,
  // Tools Google and Anthropic run on Vertex and bill beyond the visible input (https://cloud.google.com/vertex-ai/generative-ai/pricing):
  // their results come back as input tokens, so a budget reserves the context window for input. Gemini: Grounding with Google
  // Search $35 per 1,000 grounded prompts (one per request; Gemini 3 bills each query: refused under a budget), Maps grounding
  // $25 per 1,000; Web Grounding for Enterprise and grounding on your own data (`retrieval`) are billed by other products'
  // meters, which no request field bounds (refused under a budget); URL context and code execution cost tokens only. Claude on
  // Vertex: web search $10 per 1,000 searches (at most the tool's `max_uses`), web fetch tokens only, code execution by time.
  tools: {
    google_search: { match: { toolKey: ['googleSearch', 'google_search', 'googleSearchRetrieval', 'google_search_retrieval'] }, perUse: 0.035, uses: { perRequest: 1 } },
    google_search_per_query: { match: { toolKey: ['googleSearch', 'google_search', 'googleSearchRetrieval', 'google_search_retrieval'] }, unbounded: true, models: ['gemini-3*'] },
    google_maps: { match: { toolKey: ['googleMaps', 'google_maps'] }, perUse: 0.025, uses: { perRequest: 1 } },
    enterprise_web_search: { match: { toolKey: ['enterpriseWebSearch', 'enterprise_web_search'] }, unbounded: true },
    retrieval: { match: { toolKey: ['retrieval'] }, unbounded: true },
    url_context: { match: { toolKey: ['urlContext', 'url_context'] } },
    code_execution: { match: { toolKey: ['codeExecution', 'code_execution'] } },
    claude_web_search: { match: { toolType: ['web_search_*'] }, perUse: 0.01, uses: { toolField: 'max_uses' } },
    claude_web_fetch: { match: { toolType: ['web_fetch_*'] } },
    claude_code_execution: { match: { toolType: ['code_execution_*'] }, unbounded: true },
  },
  // Every request field or mode that changes what Vertex bills: Claude's fast mode (`speed`) is not priced here; a
  // Gemini request's response modalities (`generationConfig.responseModalities`: audio output) are priced where the
  // model has audio prices. Under a cap a value with no price is refused (price_unknown).
  priceDimensions: {
    fast_mode: { field: 'speed', values: { standard: 'standard' } },
    response_modalities: { field: 'generationConfig.responseModalities', present: 'audio', description: 'audio (or image) output' },
    response_modalities_snake: { field: 'generation_config.response_modalities', present: 'audio', description: 'the same, snake_case' },
    tools: { pricedBy: 'tools', description: 'provider-side tools: `tools` above' },
    long_context: { pricedBy: 'longContext', description: 'a request past a long-context threshold, priced whole at its prices' },
  },
} satisfies ProviderPlugin;
