// Amazon Bedrock Runtime: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html
// SDK endpoint: <gateway>/v1/proxy (no trailing slash). The credential is a region plus either an
// AWS key pair (signed with SigV4 per request, over the exact body) or a Bedrock API key (Bearer).
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
  upstream: 'https://bedrock-runtime.{region}.amazonaws.com',
  credential: {
    fields: {
      region: { pattern: /^[a-z]{2}(-[a-z]+)+-\d$/, maxLength: 32, description: 'AWS region, e.g. us-east-1' },
      aws_access_key_id: { secret: true, optional: true, pattern: /^[A-Z0-9]{16,128}$/, description: 'IAM access key id (with aws_secret_access_key)' },
      aws_secret_access_key: { secret: true, optional: true, main: true, pattern: /^[A-Za-z0-9/+=]{16,128}$/, description: 'IAM secret access key' },
      aws_session_token: { secret: true, optional: true, maxLength: 8192, description: 'Temporary credentials only' },
      api_key: { secret: true, optional: true, description: 'A Bedrock API key (sent as Bearer), instead of the key pair' },
    },
    check({ secrets }) {
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
  // On-demand list prices in USD per million tokens from https://aws.amazon.com/bedrock/pricing/ (Anthropic's and
  // Amazon's model cards for limits), as of `pricesAsOf`; operators override or extend them with KEYWARD_PRICES —
  // in particular for application inference-profile ARNs (their names are the operator's own; an ARN prefix works)
  // and other providers' models. From Claude 4.5 on, in-region and geographic profiles cost 10% more than `global.`.
  // Nova's cached reads cost a quarter of input and its cache writes nothing extra.
  // Claude's server tools, should Bedrock run them for an InvokeModel body that names them (Anthropic-native `tools`): their
  // results would come back as input tokens (the context window is reserved), web search at $10 per 1,000 searches (at most
  // the tool's `max_uses`), code execution by time (refused under a budget). Converse's `toolConfig` tools are the caller's
  // own: the model asks, the caller runs them and sends the results as visible input.
  tools: {
    web_search: { match: { toolType: ['web_search_*'] }, perUse: 0.01, uses: { toolField: 'max_uses' } },
    web_fetch: { match: { toolType: ['web_fetch_*'] } },
    code_execution: { match: { toolType: ['code_execution_*'] }, unbounded: true },
  },
  pricesAsOf: '2025-11-24',
  prices: {
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
