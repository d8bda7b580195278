import test from 'ava';
import OpenAI from 'openai';
import { proxyFixture } from '../support/proxy-fixture.js';
import { WORDS } from '../support/fake-provider.js';

test('the official OpenAI SDK streams a chat completion with apiKey = ptok_ and a baseURL', async (t) => {
  const f = await proxyFixture(t);
  const client = new OpenAI({ apiKey: f.tokens.openai.token, baseURL: `${f.app.url}/v1/proxy/v1`, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Say hello' }],
    stream: true,
    stream_options: { include_usage: true },
  }, { headers: { 'x-fake-events': '4', 'x-fake-delay-ms': '5' } });
  let text = '';
  let chunks = 0;
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    chunks++;
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  t.is(text, WORDS.slice(0, 4).join(''));
  t.true(chunks >= 5);
  t.is(usage?.completion_tokens, 4);
  const got = f.fake.received.at(-1)!;
  t.is(got.headers.authorization, `Bearer ${f.keys.openai}`);
  t.false(JSON.stringify(got.rawHeaders).includes(f.tokens.openai.token));
});

test('OpenAI SDK: plain completion, tool calls, and provider errors as typed SDK errors', async (t) => {
  const f = await proxyFixture(t);
  const client = new OpenAI({ apiKey: f.tokens.openai.token, baseURL: `${f.app.url}/v1/proxy/v1`, maxRetries: 0 });
  const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  t.is(plain.choices[0]!.message.content, WORDS.slice(0, 3).join(''));
  t.is(plain.usage?.prompt_tokens, 11);

  const tools = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'weather?' }],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
  });
  const call = tools.choices[0]!.message.tool_calls![0]!;
  t.is(call.type, 'function');
  t.is((call as any).function.name, 'get_weather');
  t.deepEqual(JSON.parse((call as any).function.arguments), { city: 'Paris' });

  const models = await client.models.list();
  t.is(models.data[0]!.id, 'fake-model');

  // The provider's own error surfaces as the SDK's typed error with its status.
  const rateLimited = await t.throwsAsync(client.chat.completions.create({ model: 'm', messages: [] }, { headers: { 'x-fake-status': '429' } }));
  t.true(rateLimited instanceof OpenAI.RateLimitError);
  t.is((rateLimited as InstanceType<typeof OpenAI.APIError>).status, 429);
  const badRequest = await t.throwsAsync(client.chat.completions.create({ model: 'm', messages: [] }, { headers: { 'x-fake-status': '400' } }));
  t.true(badRequest instanceof OpenAI.BadRequestError);

  // The gateway's own refusals are typed too.
  const bad = new OpenAI({ apiKey: 'ptok_not_a_real_token', baseURL: `${f.app.url}/v1/proxy/v1`, maxRetries: 0 });
  const unauth = await t.throwsAsync(bad.chat.completions.create({ model: 'm', messages: [] }));
  t.true(unauth instanceof OpenAI.AuthenticationError);
  t.is((unauth as any).error?.code ?? (unauth as any).code, 'invalid_token');
  const notAllowed = await t.throwsAsync(client.images.edit({ image: new File(['x'], 'a.png'), prompt: 'x' } as any));
  t.true(notAllowed instanceof OpenAI.PermissionDeniedError);
});
