import test from 'ava';
import Anthropic from '@anthropic-ai/sdk';
import { proxyFixture } from '../support/proxy-fixture.js';
import { WORDS } from '../support/fake-provider.js';

test('the official Anthropic SDK streams a message with apiKey = ptok_ and a baseURL', async (t) => {
  const f = await proxyFixture(t);
  const client = new Anthropic({ apiKey: f.tokens.anthropic.token, baseURL: `${f.app.url}/v1/proxy`, maxRetries: 0 });
  const stream = client.messages.stream({
    model: 'claude-fake-model',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Say hello' }],
  }, { headers: { 'x-fake-events': '5', 'x-fake-delay-ms': '5' } });
  const deltas: string[] = [];
  stream.on('text', (d) => deltas.push(d));
  const final = await stream.finalMessage();
  t.deepEqual(deltas, WORDS.slice(0, 5));
  t.is(final.usage.output_tokens, 5);
  t.is(final.usage.input_tokens, 13);
  const got = f.fake.received.at(-1)!;
  t.is(got.headers['x-api-key'], f.keys.anthropic);
  t.truthy(got.headers['anthropic-version']);
  t.false(JSON.stringify(got.rawHeaders).includes(f.tokens.anthropic.token));
});

test('Anthropic SDK: plain message and errors as typed SDK errors', async (t) => {
  const f = await proxyFixture(t);
  const client = new Anthropic({ apiKey: f.tokens.anthropic.token, baseURL: `${f.app.url}/v1/proxy`, maxRetries: 0 });
  const msg = await client.messages.create({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  t.is((msg.content[0] as Anthropic.TextBlock).text, WORDS.slice(0, 3).join(''));
  const overloaded = await t.throwsAsync(client.messages.create({ model: 'claude-x', max_tokens: 10, messages: [] }, { headers: { 'x-fake-status': '529' } }));
  t.true(overloaded instanceof Anthropic.APIError);
  t.is((overloaded as InstanceType<typeof Anthropic.APIError>).status, 529);
  const bad = new Anthropic({ apiKey: 'ptok_wrong', baseURL: `${f.app.url}/v1/proxy`, maxRetries: 0 });
  const unauth = await t.throwsAsync(bad.messages.create({ model: 'claude-x', max_tokens: 10, messages: [] }));
  t.true(unauth instanceof Anthropic.AuthenticationError);
});
