/**
 * A federated Bedrock credential (no secret: a role that trusts Keyward's OIDC identity for the
 * organisation) through the official clients, unchanged: `@aws-sdk/client-bedrock-runtime` Converse and
 * ConverseStream, and `@anthropic-ai/bedrock-sdk`. The fake STS verifies Keyward's JWT against the
 * JWKS it fetches over HTTP and the role's trust, then issues temporary credentials; the fake Bedrock
 * verifies the gateway's SigV4 signature with them and their session token.
 */
import test from 'ava';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import AnthropicBedrock from '@anthropic-ai/bedrock-sdk';
import { PIECES, USAGE } from '../support/cloud/bedrock-fake.js';
import { federationFixture } from '../support/cloud/federation-fixture.js';

const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const MESSAGES = [{ role: 'user' as const, content: [{ text: 'hello' }] }];

test('BedrockRuntimeClient Converse and ConverseStream, and AnthropicBedrock, on a federated credential: one AssumeRoleWithWebIdentity, SigV4 with its session token', async (t) => {
  const f = await federationFixture(t);
  const cred = await f.credential(f.orgA, 'bedrock');
  const client = new BedrockRuntimeClient({ endpoint: `${f.app.url}/v1/proxy`, region: 'us-east-1', token: { token: cred.token }, authSchemePreference: ['httpBearerAuth'] });
  t.teardown(() => client.destroy());
  const out = await client.send(new ConverseCommand({ modelId: MODEL, messages: MESSAGES, inferenceConfig: { maxTokens: 100 } }));
  t.is(out.output?.message?.content?.[0]?.text, PIECES.join(''));
  t.deepEqual([out.usage?.inputTokens, out.usage?.outputTokens], [USAGE.inputTokens, USAGE.outputTokens]);

  const stream = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages: MESSAGES }));
  const pieces: string[] = [];
  for await (const ev of stream.stream!) if (ev.contentBlockDelta?.delta?.text !== undefined) pieces.push(ev.contentBlockDelta.delta.text);
  t.deepEqual(pieces, PIECES, 'the text arrived in pieces');

  const anthropic = new AnthropicBedrock({ baseURL: `${f.app.url}/v1/proxy`, apiKey: cred.token, awsRegion: 'us-east-1', maxRetries: 0 });
  const streamed: string[] = [];
  const s = anthropic.messages.stream({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
  s.on('text', (text) => streamed.push(text));
  await s.finalMessage();
  t.deepEqual(streamed, PIECES);

  t.is(f.sts.calls, 1, 'one exchange served every request');
  const issued = f.sts.issued[0]!;
  t.is(issued.subject, `org:${f.orgA.id}`);
  t.is(f.bedrock.received.length, 3);
  for (const got of f.bedrock.received) {
    t.is(got.auth, 'sigv4', `${got.url}: the signature verified with the temporary credentials`);
    t.is(got.headers['x-amz-security-token'], issued.sessionToken);
    t.regex(String(got.headers.authorization), new RegExp(`Credential=${issued.accessKeyId}/`));
  }
});
