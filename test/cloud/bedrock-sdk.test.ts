/**
 * The official clients, unchanged, against the gateway over real sockets:
 * `@aws-sdk/client-bedrock-runtime` (HTTP/2 cleartext only: served next to
 * HTTP/1.1 on the same port) with a Bearer ptok and with the ptok as its SigV4
 * access key id, and `@anthropic-ai/bedrock-sdk` (fetch, HTTP/1.1) streaming.
 * The fake Bedrock verifies the gateway's own signature; streamed text arrives in
 * pieces; usage is read from the binary event stream.
 */
import test from 'ava';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, InvokeModelCommand, CountTokensCommand } from '@aws-sdk/client-bedrock-runtime';
import AnthropicBedrock from '@anthropic-ai/bedrock-sdk';
import { api } from '../support/app.js';
import { PIECES, USAGE } from '../support/cloud/bedrock-fake.js';
import { bedrockGateway, bedrockToken, type BedrockSetup } from '../support/cloud/bedrock-setup.js';
import { quiet } from '../support/wait.js';

const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const ARN = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0';
const MESSAGES = [{ role: 'user' as const, content: [{ text: 'hello' }] }];

const bearerClient = (s: BedrockSetup, ptok: string) => new BedrockRuntimeClient({
  endpoint: `${s.app.url}/v1/proxy`, region: 'us-east-1', token: { token: ptok }, authSchemePreference: ['httpBearerAuth'],
});
const sigv4Client = (s: BedrockSetup, ptok: string) => new BedrockRuntimeClient({
  endpoint: `${s.app.url}/v1/proxy`, region: 'ap-south-1', credentials: { accessKeyId: ptok, secretAccessKey: 'anything', sessionToken: 'caller-session-token' },
});

async function usageOf(s: BedrockSetup, tokenId: string): Promise<unknown> {
  await quiet(s.app); // usage is recorded when the response closes
  return (await api(s.app, 'GET', `/v1/tokens/${tokenId}`, { token: s.org.token })).body.usage;
}

for (const [mode, client] of [['Bearer', bearerClient], ['SigV4 access key id', sigv4Client]] as const) {
  test(`BedrockRuntimeClient over h2c, ptok as ${mode}: Converse, ConverseStream in pieces, InvokeModel and CountTokens`, async (t) => {
    const s = await bedrockGateway(t);
    const tok = await bedrockToken(s, 'session');
    const c = client(s, tok.token);
    t.teardown(() => c.destroy());

    const out = await c.send(new ConverseCommand({ modelId: MODEL, messages: MESSAGES, inferenceConfig: { maxTokens: 100 } }));
    t.is(out.output?.message?.content?.[0]?.text, PIECES.join(''));
    t.deepEqual([out.usage?.inputTokens, out.usage?.outputTokens], [USAGE.inputTokens, USAGE.outputTokens]);

    const stream = await c.send(new ConverseStreamCommand({ modelId: ARN, messages: MESSAGES }));
    const pieces: string[] = [];
    let metadata: unknown;
    for await (const ev of stream.stream!) {
      if (ev.contentBlockDelta?.delta?.text !== undefined) pieces.push(ev.contentBlockDelta.delta.text);
      if (ev.metadata) metadata = ev.metadata.usage;
    }
    t.deepEqual(pieces, PIECES, 'the text arrived in pieces, as the fake sent it');
    t.like(metadata, USAGE);

    const invoked = await c.send(new InvokeModelCommand({ modelId: MODEL, contentType: 'application/json', accept: 'application/json', body: JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }) }));
    t.is(JSON.parse(Buffer.from(invoked.body).toString()).usage.output_tokens, USAGE.outputTokens);
    const counted = await c.send(new CountTokensCommand({ modelId: MODEL, input: { converse: { messages: MESSAGES } } }));
    t.is(counted.inputTokens, USAGE.inputTokens);

    for (const got of s.fake.received) {
      t.is(got.auth, 'sigv4', `${got.url}: the gateway's signature verified`);
      t.false(JSON.stringify(got.headers).includes(tok.token), 'no ptok upstream');
      t.false(JSON.stringify(got.headers).includes('caller-session-token'), 'the caller\'s session token never upstream');
      t.is(got.headers['x-amz-user-agent'], undefined, 'no caller x-amz-user-agent upstream');
      t.is(got.headers['amz-sdk-invocation-id'], undefined);
      t.false(Object.keys(got.headers).some((h) => h.startsWith(':')), 'no HTTP/2 pseudo-header upstream');
    }
    t.true(s.fake.received.some((r) => r.url.includes('inference-profile%2Fus.anthropic')), 'the ARN\'s slash stayed encoded');
    // Converse + ConverseStream (from the event stream's metadata frame) + InvokeModel + CountTokens (input only).
    t.like(await usageOf(s, tok.id), { requests: 4, input_tokens: 4 * USAGE.inputTokens, output_tokens: 3 * USAGE.outputTokens });
  });
}

test('AnthropicBedrock streaming (Bearer ptok, InvokeModelWithResponseStream): text in pieces, usage from invocationMetrics', async (t) => {
  const s = await bedrockGateway(t);
  const tok = await bedrockToken(s, 'api_key');
  const client = new AnthropicBedrock({ baseURL: `${s.app.url}/v1/proxy`, apiKey: tok.token, awsRegion: 'us-east-1', maxRetries: 0 });
  const pieces: string[] = [];
  const stream = client.messages.stream({ model: ARN, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
  stream.on('text', (text) => pieces.push(text));
  const final = await stream.finalMessage();
  t.deepEqual(pieces, PIECES);
  t.is(final.usage.output_tokens, USAGE.outputTokens);
  const got = s.fake.received.at(-1)!;
  t.is(got.auth, 'bearer');
  t.regex(got.url, /^\/model\/arn:aws:bedrock:us-east-1:123456789012:inference-profile%2Fus\.anthropic[^/]+\/invoke-with-response-stream$/);
  t.like(await usageOf(s, tok.id), { requests: 1, input_tokens: USAGE.inputTokens, output_tokens: USAGE.outputTokens });
});
