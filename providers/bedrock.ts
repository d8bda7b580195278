// Amazon Bedrock Runtime: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html
// SDK endpoint: <gateway>/v1/proxy (no trailing slash). The credential is a region plus either an
// AWS key pair (signed with SigV4 per request, over the exact body), a Bedrock API key (Bearer), or
// no secret at all: `federated` with a `role_arn` that trusts Keyward's OIDC identity for the
// organisation, assumed with STS AssumeRoleWithWebIdentity (signers/aws-web-identity.ts) and the
// temporary credentials signing with SigV4 (docs/operate/identity.md).
// The caller presents its ptok as a Bearer token (AWS_BEARER_TOKEN_BEDROCK, AnthropicBedrock's
// apiKey) or as the access key id of its own SigV4 signature (credentials.accessKeyId = ptok_…);
// the caller's signature and every x-amz-* / amz-sdk-* header are dropped (signers/sigv4.ts).
import type { ProviderPlugin } from '@keyward/sdk';
import { bedrockUsage } from './lib/bedrock-usage.js';

/** A model id (`anthropic.claude-…-v1:0`) or an inference-profile ARN, its `/` sent as `%2F`. */
const model = { resourceParams: ['model'] } as const;

export default {
  apiVersion: 1,
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
  // JSON keys, count headers and AWS's binary event stream (lib/bedrock-usage.ts).
  usage: bedrockUsage,
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
  // Every request field or mode that changes what Bedrock bills: an InvokeModel body in Anthropic's shape may ask for
  // fast mode (`speed`), which Bedrock does not price here; Converse's latency-optimized inference
  // (`performanceConfig.latency: "optimized"`) is priced apart and not here. Under a cap either is refused (price_unknown).
  priceDimensions: {
    fast_mode: { field: 'speed', values: { standard: 'standard' } },
    latency: { field: 'performanceConfig.latency', values: { standard: 'standard' } },
    tools: { pricedBy: 'tools', description: 'provider-side tools: `tools` above' },
    long_context: { pricedBy: 'longContext', description: 'a request past a long-context threshold, priced whole at its prices' },
  },
} satisfies ProviderPlugin;
