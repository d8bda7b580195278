// Amazon Bedrock Runtime: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html
// SDK endpoint: <gateway>/v1/proxy (no trailing slash). The credential is a region plus either an
// AWS key pair (signed with SigV4 per request, over the exact body) or a Bedrock API key (Bearer).
// The caller presents its ptok as a Bearer token (AWS_BEARER_TOKEN_BEDROCK, AnthropicBedrock's
// apiKey) or as the access key id of its own SigV4 signature (credentials.accessKeyId = ptok_…);
// the caller's signature and every x-amz-* / amz-sdk-* header are dropped (signers/sigv4.ts).
import type { ProviderPlugin } from '../src/catalog/provider.js';

/** A model id (`anthropic.claude-…-v1:0`) or an inference-profile ARN, its `/` sent as `%2F`. */
const model = { resourceParams: ['model'] } as const;

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
} satisfies ProviderPlugin;
