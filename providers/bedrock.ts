// Amazon Bedrock Runtime: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html
// SDK endpoint: <gateway>/v1/proxy (no trailing slash). The credential is a region plus either an
// AWS key pair (signed with SigV4 per request, over the exact body), a Bedrock API key (Bearer), or
// no secret at all: `federated` with a `role_arn` that trusts Keyward's OIDC identity for the
// organisation, assumed with STS AssumeRoleWithWebIdentity (signers/aws-web-identity.ts) and the
// temporary credentials signing with SigV4 (docs/operate/identity.md).
// The caller presents its ptok as a Bearer token (AWS_BEARER_TOKEN_BEDROCK, AnthropicBedrock's
// apiKey) or as the access key id of its own SigV4 signature (credentials.accessKeyId = ptok_…);
// the caller's signature and every x-amz-* / amz-sdk-* header are dropped (signers/sigv4.ts).
import type { ModelPrice, ProviderPlugin } from '../src/catalog/provider.js';

/** A model id (`anthropic.claude-…-v1:0`) or an inference-profile ARN, its `/` sent as `%2F`. */
const model = { resourceParams: ['model'] } as const;

/** The geographic cross-region inference profiles' prefixes (`us.anthropic.claude-…`); '' is the in-region model id. */
const GEOS = ['', 'us.', 'us-gov.', 'eu.', 'apac.', 'jp.', 'au.', 'ca.'] as const;

/**
 * One model's entries (`<id>*` covers its `-v1:0` versions): at `regional` prices for the model id and every
 * geographic profile, and at `global` ones for the `global.` profile (the same for models before Claude 4.5).
 */
function priced(id: string, regional: ModelPrice, global: ModelPrice = regional): Record<string, ModelPrice> {
  return { ...Object.fromEntries(GEOS.map((geo) => [`${geo}${id}*`, regional])), [`global.${id}*`]: global };
}

/** Claude 5 and 4.6 to 4.8 at Anthropic's list prices (USD per million tokens, 5-minute cache writes). */
const CLAUDE_LIST: Record<string, ModelPrice> = {
  'claude-fable-5-2': { input: 8, cacheWriteInput: 16, output: 40, maxOutput: 128_000, contextWindow: 1_000_000 },
  'claude-fable-5-1': { input: 10, cachedInput: 0.25, cacheWriteInput: 12.5, output: 50, maxOutput: 128_000, contextWindow: 1_000_000 },
  'claude-fable-5': { input: 10, cachedInput: 1, cacheWriteInput: 12.5, output: 50, maxOutput: 128_000, contextWindow: 1_000_000 },
  'claude-opus-5-5': { input: 4, cachedInput: 0.2, cacheWriteInput: 5, output: 20, maxOutput: 128_000, contextWindow: 1_000_000 },
  'claude-opus-5': { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25, maxOutput: 128_000, contextWindow: 1_000_000 },
  'claude-opus-4-8': { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25 },
  'claude-opus-4-7': { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25, maxOutput: 128_000, contextWindow: 1_000_000 },
  'claude-opus-4-6': { input: 5, cachedInput: 0.5, cacheWriteInput: 6.25, output: 25, maxOutput: 128_000, contextWindow: 1_000_000 },
  'claude-sonnet-5-5': { input: 2, cachedInput: 0.1, cacheWriteInput: 2.5, output: 10, maxOutput: 128_000, contextWindow: 1_000_000 },
  'claude-sonnet-5': { input: 2, cachedInput: 0.2, cacheWriteInput: 2.5, output: 10, maxOutput: 128_000, contextWindow: 1_000_000 },
  'claude-sonnet-4-6': { input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 64_000, contextWindow: 1_000_000 },
  'claude-haiku-5-5': {
    input: 0.1, cachedInput: 0.01, cacheWriteInput: 0.125, output: 0.5, maxOutput: 128_000, contextWindow: 1_000_000,
    longContext: { aboveInputTokens: 100_000, input: 0.5, cachedInput: 0.05, cacheWriteInput: 0.625, output: 2.5 },
  },
};

/** Every price of `p` 10% higher (in-region and geographic profiles of Claude 4.5 and later). */
function tenPercentMore(p: ModelPrice): ModelPrice {
  const up = (n: number | undefined) => (n === undefined ? undefined : Math.round(n * 1.1 * 1e6) / 1e6);
  const tier = <T extends { input: number; output: number; cachedInput?: number; cacheWriteInput?: number }>(q: T): T => ({
    ...q, input: up(q.input)!, output: up(q.output)!,
    ...(q.cachedInput !== undefined ? { cachedInput: up(q.cachedInput) } : {}), ...(q.cacheWriteInput !== undefined ? { cacheWriteInput: up(q.cacheWriteInput) } : {}),
  });
  return { ...tier(p), ...(p.longContext ? { longContext: tier(p.longContext) } : {}) };
}

/** Claude's prices from its input and output price: cache reads 0.1×, 5-minute cache writes 1.25× input. */
const claude = (input: number, output: number, maxOutput: number, contextWindow = 200_000): ModelPrice => ({
  input, output, cachedInput: input / 10, cacheWriteInput: input * 1.25, maxOutput, contextWindow,
});
/** Sonnet 4 and 4.5 take up to 1M input tokens (beta); past 200k the whole request costs twice the input and 1.5× the output. */
const longClaude = (input: number, output: number): ModelPrice => ({
  ...claude(input, output, 64_000, 1_000_000),
  longContext: { aboveInputTokens: 200_000, input: input * 2, cachedInput: input / 5, cacheWriteInput: input * 2.5, output: output * 1.5 },
});

export default {
  id: 'bedrock',
  name: 'Amazon Bedrock',
  // How its SDKs reach it through Keyward (the console shows these after minting).
  sdk: [
    {
      name: 'AWS SDKs (@aws-sdk/client-bedrock-runtime, boto3, …)',
      env: { AWS_ENDPOINT_URL_BEDROCK_RUNTIME: '{proxy}', AWS_BEARER_TOKEN_BEDROCK: '{token}', AWS_REGION: '{region}' },
    },
    { name: 'AnthropicBedrock (@anthropic-ai/bedrock-sdk)', env: { ANTHROPIC_BEDROCK_BASE_URL: '{proxy}', AWS_BEARER_TOKEN_BEDROCK: '{token}', AWS_REGION: '{region}' } },
  ],
  upstream: 'https://bedrock-runtime.{region}.amazonaws.com',
  credential: {
    fields: {
      region: {
        pattern: /^[a-z]{2}(-[a-z]+)+-\d$/, maxLength: 32, description: 'AWS region, e.g. us-east-1',
        label: 'AWS region', help: 'The region your Bedrock models run in, such as us-east-1.',
      },
      aws_access_key_id: {
        secret: true, optional: true, pattern: /^[A-Z0-9]{16,128}$/, description: 'IAM access key id (with aws_secret_access_key)',
        label: 'Access key ID', help: 'An IAM access key ID such as AKIA…, given with its secret access key (or give a Bedrock API key instead).',
      },
      aws_secret_access_key: {
        secret: true, optional: true, main: true, pattern: /^[A-Za-z0-9/+=]{16,128}$/, description: 'IAM secret access key',
        label: 'Secret access key', help: 'The secret that goes with the access key ID.',
      },
      aws_session_token: {
        secret: true, optional: true, maxLength: 8192, description: 'Temporary credentials only',
        label: 'Session token', help: 'Only for temporary credentials from AWS STS.',
      },
      api_key: {
        secret: true, optional: true, description: 'A Bedrock API key (sent as Bearer), instead of the key pair',
        label: 'Bedrock API key', help: 'A Bedrock API key, instead of the access key pair.',
      },
      role_arn: {
        optional: true,
        pattern: /^arn:aws(-cn|-us-gov)?:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/,
        maxLength: 600,
        description: 'With `federated`: the IAM role Keyward assumes as the organisation (its trust policy names Keyward\'s issuer and `sub` org:<org_id>)',
        label: 'Role ARN', help: 'Federated only: the IAM role this gateway assumes for your organisation, such as arn:aws:iam::123456789012:role/keyward.',
      },
      federated: {
        optional: true, flag: true, description: '"true": no stored secret; Keyward assumes `role_arn` with its own OIDC token for the organisation',
        label: 'Federated (no stored key)', help: 'Choose this to assume the role with this gateway\'s identity for your organisation instead of storing an AWS key.',
      },
    },
    check({ secrets, plain }) {
      const any = Object.keys(secrets)[0];
      if (plain.federated !== undefined) {
        if (any !== undefined) return { field: any, message: 'A federated credential holds no secret: give `region`, `role_arn` and `federated: true` only.' };
        if (plain.role_arn === undefined) return { field: 'role_arn', message: '`role_arn` is required with `federated`: the IAM role that trusts this gateway for your organisation.' };
        return undefined;
      }
      if (plain.role_arn !== undefined) return { field: 'role_arn', message: '`role_arn` goes with `federated: true` (the role Keyward assumes with its own identity).' };
      const pair = secrets.aws_access_key_id !== undefined || secrets.aws_secret_access_key !== undefined;
      if (secrets.api_key !== undefined && (pair || secrets.aws_session_token !== undefined)) {
        return { field: 'api_key', message: 'Give either `api_key` or the AWS key pair (`aws_access_key_id`, `aws_secret_access_key`), not both.' };
      }
      if (secrets.api_key !== undefined) return undefined;
      if (secrets.aws_access_key_id === undefined) return { field: 'aws_access_key_id', message: '`aws_access_key_id` and `aws_secret_access_key` are required (or give `api_key`).' };
      if (secrets.aws_secret_access_key === undefined) return { field: 'aws_secret_access_key', message: '`aws_secret_access_key` is required with `aws_access_key_id`.' };
      return undefined;
    },
  },
  auth: { kind: 'signer', signer: 'sigv4', options: { service: 'bedrock' } },
  tokenIn: [
    { header: 'authorization', scheme: 'Bearer' },
    // The ptok as the access key id of the caller's own SigV4 signature; the signature itself is discarded.
    { header: 'authorization', pattern: /^AWS4-HMAC-SHA256 Credential=(ptok_[0-9A-Za-z]{38})\// },
  ],
  usage: 'bedrock',
  routes: [
    { method: 'POST', path: 'model/{model}/converse', ...model },
    { method: 'POST', path: 'model/{model}/converse-stream', ...model },
    { method: 'POST', path: 'model/{model}/invoke', ...model },
    { method: 'POST', path: 'model/{model}/invoke-with-response-stream', ...model },
    { method: 'POST', path: 'model/{model}/count-tokens', ...model },
  ],
  // Claude's server tools, should Bedrock run them for an InvokeModel body that names them (Anthropic-native `tools`): their
  // results would come back as input tokens (the context window is reserved), web search at $10 per 1,000 searches (at most
  // the tool's `max_uses`), code execution by time (refused under a budget). Converse's `toolConfig` tools are the caller's
  // own: the model asks, the caller runs them and sends the results as visible input.
  tools: {
    web_search: { match: { toolType: ['web_search_*'] }, perUse: 0.01, uses: { toolField: 'max_uses' } },
    web_fetch: { match: { toolType: ['web_fetch_*'] } },
    code_execution: { match: { toolType: ['code_execution_*'] }, unbounded: true },
  },
  // On-demand list prices in USD per million tokens from https://aws.amazon.com/bedrock/pricing/ (Anthropic's and
  // Amazon's model cards for limits), as of `pricesAsOf`; operators override or extend them with KEYWARD_PRICES —
  // in particular for application inference-profile ARNs (their names are the operator's own; an ARN prefix works)
  // and other providers' models. From Claude 4.5 on, in-region and geographic profiles cost 10% more than `global.`.
  // Nova's cached reads cost a quarter of input and its cache writes nothing extra. Claude 5 and 4.6 to 4.8 (ids
  // without a date, `anthropic.claude-opus-5-5`): Anthropic's list prices for `global.` (its page of 2026-11-25: see
  // anthropic.ts, with what it could not confirm), 10% more in-region and geographic, as for Claude 4.5.
  pricesAsOf: '2026-11-25',
  prices: {
    ...Object.fromEntries(Object.entries(CLAUDE_LIST).flatMap(([id, p]) => Object.entries(priced(`anthropic.${id}`, tenPercentMore(p), p)))),
    ...priced('anthropic.claude-opus-4-5-20251101', claude(5.5, 27.5, 64_000), claude(5, 25, 64_000)),
    ...priced('anthropic.claude-sonnet-4-5-20250929', longClaude(3.3, 16.5), longClaude(3, 15)),
    ...priced('anthropic.claude-haiku-4-5-20251001', claude(1.1, 5.5, 64_000), claude(1, 5, 64_000)),
    ...priced('anthropic.claude-opus-4-1-20250805', claude(15, 75, 32_000)),
    ...priced('anthropic.claude-opus-4-20250514', claude(15, 75, 32_000)),
    ...priced('anthropic.claude-sonnet-4-20250514', longClaude(3, 15)),
    ...priced('anthropic.claude-3-7-sonnet-20250219', claude(3, 15, 128_000)),
    ...priced('anthropic.claude-3-5-haiku-20241022', claude(0.8, 4, 8_192)),
    ...priced('amazon.nova-pro-v1', { input: 0.8, cachedInput: 0.2, output: 3.2, contextWindow: 300_000 }),
    ...priced('amazon.nova-lite-v1', { input: 0.06, cachedInput: 0.015, output: 0.24, contextWindow: 300_000 }),
    ...priced('amazon.nova-micro-v1', { input: 0.035, cachedInput: 0.00875, output: 0.14, contextWindow: 128_000 }),
  },
} satisfies ProviderPlugin;
