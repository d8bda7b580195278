/**
 * Official SDKs with a pooled token: `openai` and `@anthropic-ai/sdk` see a plain success when one member is
 * rate-limited (its 429 never reaches them), and the provider's own 429 (the SDK's typed RateLimitError)
 * when every member is.
 */
import test from 'ava';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { WORDS } from '../support/fake-provider.js';
import { poolFixture } from '../support/pool-fixture.js';

test('openai SDK: one member rate-limited → plain success; every member → the provider\'s own 429', async (t) => {
  const f = await poolFixture(t, [429, 'default']);
  const { token } = await f.pool({ strategy: 'ordered' });
  const client = new OpenAI({ apiKey: token, baseURL: `${f.app.url}/v1/proxy/v1`, maxRetries: 0 });
  const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  t.is(plain.choices[0]!.message.content, WORDS.slice(0, 3).join(''));
  t.deepEqual(f.hits, [0, 1]);
  f.behave(0, 'default');
  f.behave(1, 429);
  // Member 0 cools for its Retry-After (20 s): member 1 is the only one tried, and its 429 is the caller's.
  const err = await t.throwsAsync(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true }));
  t.true(err instanceof OpenAI.RateLimitError, 'with the only healthy member rate-limited and the other cooling, the provider\'s own 429');
  t.deepEqual(f.hits, [0, 1, 1], 'the cooling member was not tried again');

  const all = await poolFixture(t, [429, 429, 529]);
  const pooled = await all.pool({ strategy: 'round_robin' });
  const c2 = new OpenAI({ apiKey: pooled.token, baseURL: `${all.app.url}/v1/proxy/v1`, maxRetries: 0 });
  const limited = await t.throwsAsync(c2.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }));
  t.true(limited instanceof OpenAI.APIError);
  t.is((limited as InstanceType<typeof OpenAI.APIError>).status, 529, 'the last member\'s own answer');
  t.is(all.hits.length, 3, 'each member tried once');
});

test('anthropic SDK: one member rate-limited → plain success; every member → RateLimitError', async (t) => {
  const f = await poolFixture(t, [429, 'default', 429], { provider: 'anthropic' });
  const { token } = await f.pool({ strategy: 'ordered' });
  const client = new Anthropic({ apiKey: token, baseURL: `${f.app.url}/v1/proxy`, maxRetries: 0 });
  const msg = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] });
  t.is(msg.type, 'message');
  t.deepEqual(f.hits, [0, 1]);
  f.behave(1, 429);
  const err = await t.throwsAsync(client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] }));
  t.true(err instanceof Anthropic.RateLimitError);
  t.deepEqual(f.hits.slice(2), [1, 2], 'the cooling member skipped, the other two tried');
});
