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
import { ManualClock } from '../support/clocks.js';
import { eventually } from '../support/wait.js';

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

const converse = (f: { proxyUrl(p: string): string }, token: string) => fetch(f.proxyUrl(`model/${MODEL}/converse`), {
  method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  body: JSON.stringify({ messages: MESSAGES, inferenceConfig: { maxTokens: 10 } }),
});

test('one AssumeRoleWithWebIdentity serves any number of concurrent requests (counted at the fake STS)', async (t) => {
  const f = await federationFixture(t);
  const cred = await f.credential(f.orgA, 'bedrock');
  f.sts.delayMs = 300;
  const answers = await Promise.all(Array.from({ length: 40 }, () => converse(f, cred.token)));
  const refused = await Promise.all(answers.filter((r) => r.status !== 200).map(async (r) => `${r.status} ${await r.text()}`));
  t.deepEqual([...new Set(answers.map((r) => r.status))], [200], refused.join('\n'));
  t.is(f.sts.calls, 1);
  t.is(f.bedrock.received.filter((r) => r.auth === 'sigv4').length, 40);
});

test('refreshed in the background before expiry: no request waits at steady state; within a minute of expiry a request waits for new credentials', async (t) => {
  const clock = new ManualClock(Date.now());
  const f = await federationFixture(t, { clock });
  const cred = await f.credential(f.orgA, 'bedrock');
  const keyOf = () => /Credential=([A-Z0-9]+)\//.exec(String(f.bedrock.received.at(-1)!.headers.authorization))![1];
  t.is((await converse(f, cred.token)).status, 200);
  t.is(f.sts.calls, 1);
  const first = f.sts.issued[0]!.accessKeyId;
  clock.advance(54 * 60_000);
  t.is((await converse(f, cred.token)).status, 200);
  t.is(f.sts.calls, 1, 'fresh: no mint');
  // Five minutes before expiry: the request goes out at once with the current credentials while the next are minted.
  clock.advance(60_000 + 1000);
  let release!: () => void;
  f.sts.hold = new Promise((r) => (release = r));
  t.is((await converse(f, cred.token)).status, 200, 'answered while the refresh is held open at STS');
  t.is(keyOf(), first);
  // The refresh runs in the background (Keyward's JWT signed, then a real request to STS): waited for as an event.
  await eventually(() => f.sts.calls === 2, 'the refresh reached STS');
  t.is((await converse(f, cred.token)).status, 200, 'and another request does not wait either, nor start a second refresh');
  t.is(f.sts.calls, 2);
  release();
  f.sts.hold = undefined;
  // Requests keep the current credentials until the refresh lands, then use the new ones (no mint meanwhile).
  await eventually(() => f.sts.issued.length >= 2, 'the refresh answered at STS');
  const second = f.sts.issued[1]!.accessKeyId;
  for (let i = 0; i < 500 && keyOf() !== second; i++) {
    t.is((await converse(f, cred.token)).status, 200);
    t.true([first, second].includes(keyOf()!));
  }
  t.is(keyOf(), second, 'the refreshed credentials sign from then on');
  t.is(f.sts.calls, 2);
  // A minute before the second set expires it is never sent: the request waits for a third.
  clock.advance(60 * 60_000 - 59_000);
  t.is((await converse(f, cred.token)).status, 200);
  t.is(f.sts.calls, 3);
  t.is(keyOf(), f.sts.issued[2]!.accessKeyId);
});
