import test from 'ava';
import { proxyFixture } from '../support/proxy-fixture.js';

test('a chat completion reaches the provider with the stored key only', async (t) => {
  const f = await proxyFixture(t);
  const res = await fetch(f.proxyUrl('v1/chat/completions'), {
    method: 'POST',
    headers: { 'x-proxy-token': f.tokens.openai.token, 'content-type': 'application/json', authorization: 'Bearer caller-own-secret' },
    body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.is(res.status, 200);
  const body = await res.json() as any;
  t.is(body.object, 'chat.completion');
  t.is(res.headers.get('x-request-id'), 'upstream-req-1');
  t.regex(res.headers.get('x-keyward-request-id') ?? '', /^req_/);
  t.truthy(res.headers.get('x-keyward-quota-remaining'));
  const got = f.fake.received.at(-1)!;
  t.is(got.url, '/v1/chat/completions');
  t.is(got.headers.authorization, `Bearer ${f.keys.openai}`);
  t.is(got.headers['x-proxy-token'], undefined);
  t.false(JSON.stringify(got.rawHeaders).includes('caller-own-secret'));
});
