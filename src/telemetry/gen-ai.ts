/**
 * Keyward's names mapped to the OpenTelemetry GenAI semantic conventions:
 * a provider id → `gen_ai.provider.name` (the registry's well-known values where
 * one exists, the provider id otherwise), and a provider route → the
 * `gen_ai.operation.name` it performs (undefined for routes that are not an
 * inference call: model lists, files, batches…).
 */

const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  bedrock: 'aws.bedrock',
  azure: 'azure.ai.openai',
  cohere: 'cohere',
  deepseek: 'deepseek',
  groq: 'groq',
  mistral: 'mistral_ai',
  perplexity: 'perplexity',
  xai: 'x_ai',
};

export function genAiProviderName(providerId: string): string {
  return PROVIDER_NAMES[providerId] ?? providerId;
}

/** Checked in order against the route's declared pattern; the first match wins. */
const OPERATIONS: ReadonlyArray<readonly [RegExp, string | undefined]> = [
  // Token counting is no inference, whatever the verb it is sent with (Vertex's `count-tokens:rawPredict`).
  [/count[-_]?tokens|countTokens|input_tokens$/i, undefined],
  [/(^|\/)chat\/completions$/, 'chat'],
  [/(^|\/)completions$/, 'text_completion'],
  [/(^|\/)(embeddings|embed)$|:(embedContent|batchEmbedContents)$/, 'embeddings'],
  [/:(generateContent|streamGenerateContent)$/, 'generate_content'],
  [/(^|\/)(chat|messages|responses|converse|converse-stream)$|:(rawPredict|streamRawPredict)$/, 'chat'],
  [/(^|\/)(invoke|invoke-with-response-stream)$/, 'text_completion'],
];

export function genAiOperation(routePattern: string): string | undefined {
  for (const [pattern, operation] of OPERATIONS) if (pattern.test(routePattern)) return operation;
  return undefined;
}
