/**
 * Bedrock through the gateway over plain HTTP/1.1 (no SDK): the credential's shape
 * (region plus either the AWS key pair or an API key), the ptok taken from Bearer or
 * from a caller's SigV4 `Credential=`, model ids with `:` and inference-profile ARNs
 * with `%2F`, and the re-signing checked by a fake Bedrock that verifies every SigV4
 * signature itself (test/support/cloud/bedrock-fake.ts).
 */
import test from 'ava';
import { api } from '../support/app.js';
import { request } from '../support/request.js';
import { ACCESS_KEY_ID, API_KEY, bedrockGateway, bedrockToken, REGION, SECRET_ACCESS_KEY, SESSION_TOKEN } from '../support/cloud/bedrock-setup.js';
import { quiet } from '../support/wait.js';

const CONVERSE = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hello' }] }], inferenceConfig: { maxTokens: 100 } });
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1%3A0';
const ARN = 'arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-sonnet-20240620-v1%3A0';
const callerSigV4 = (ptok: string) => `AWS4-HMAC-SHA256 Credential=${ptok}/20261123/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'a'.repeat(64)}`;

test('a credential is a region plus either the AWS key pair or an API key; anything else is a 400 naming the field', async (t) => {
  const s = await bedrockGateway(t);
  const create = (body: Record<string, unknown>) => api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: { provider: 'bedrock', ...body } });
  const pair = { aws_access_key_id: ACCESS_KEY_ID, aws_secret_access_key: SECRET_ACCESS_KEY };
  t.is((await create({ region: REGION, ...pair })).status, 201);
  t.is((await create({ region: REGION, api_key: API_KEY })).status, 201);
  t.is((await create({ region: REGION, ...pair, aws_session_token: SESSION_TOKEN })).status, 201);
  for (const [body, field] of [
    [{ region: REGION }, 'aws_access_key_id'],
    [{ region: REGION, aws_access_key_id: ACCESS_KEY_ID }, 'aws_secret_access_key'],
    [{ region: REGION, ...pair, api_key: API_KEY }, 'api_key'],
    [{ ...pair }, 'region'],
    [{ region: 'evil.test/x', ...pair }, 'region'],
    [{ region: 'us-east-1.evil.test', ...pair }, 'region'],
    [{ region: 'US-EAST-1', ...pair }, 'region'],
  ] as const) {
    const r = await create(body);
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.error.param, field, JSON.stringify(body));
  }
  const view = await create({ region: REGION, ...pair });
  t.false(view.text.includes(SECRET_ACCESS_KEY));
  t.is(view.body.region ?? view.body.fields?.region, REGION);
});

for (const kind of ['keys', 'session', 'api_key'] as const) {
  test(`converse with a ${kind} credential: the fake verifies what the gateway sent; the caller's auth and x-amz-* never reach it`, async (t) => {
    const s = await bedrockGateway(t);
    const tok = await bedrockToken(s, kind);
    for (const [presented, model] of [
      [{ authorization: `Bearer ${tok.token}` }, MODEL],
      [{ authorization: callerSigV4(tok.token), 'x-amz-date': '20261123T000000Z', 'x-amz-content-sha256': 'f'.repeat(64), 'x-amz-security-token': 'caller-session', 'amz-sdk-invocation-id': 'abc', 'x-amz-user-agent': 'aws-sdk-js' }, ARN],
    ] as const) {
      const r = await request(`${s.app.url}/v1/proxy/model/${model}/converse`, { headers: presented, body: CONVERSE });
      t.is(r.status, 200, r.text);
      const got = s.fake.received.at(-1)!;
      t.is(got.auth, kind === 'api_key' ? 'bearer' : 'sigv4', 'the fake accepted the gateway\'s own credential');
      t.is(got.url, `/model/${model.replaceAll('%3A', ':')}/converse`, 'the path as matched, the ARN\'s slash still encoded');
      t.false(JSON.stringify(got.headers).includes(tok.token), 'the ptok never reaches upstream');
      t.is(got.headers['amz-sdk-invocation-id'], undefined);
      t.is(got.headers['x-amz-user-agent'], undefined);
      t.not(got.headers['x-amz-security-token'], 'caller-session');
      if (kind === 'api_key') t.is(got.headers.authorization, `Bearer ${API_KEY}`);
      else t.regex(String(got.headers.authorization), new RegExp(`^AWS4-HMAC-SHA256 Credential=${ACCESS_KEY_ID}/\\d{8}/${REGION}/bedrock/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date${kind === 'session' ? ';x-amz-security-token' : ''}, `));
      t.is(got.headers['x-amz-security-token'], kind === 'session' ? SESSION_TOKEN : undefined);
    }
    await quiet(s.app); // usage is recorded when the response closes
    const usage = (await api(s.app, 'GET', `/v1/tokens/${tok.id}`, { token: s.org.token })).body.usage;
    t.like(usage, { requests: 2, input_tokens: 24, output_tokens: 6 }, 'Converse usage read from the JSON');
  });
}

test('a wrong stored secret is refused by the fake (403 with x-amzn-errortype): the verifier is not a rubber stamp', async (t) => {
  const s = await bedrockGateway(t);
  const tok = await bedrockToken(s, 'keys');
  s.fake.keys.set(ACCESS_KEY_ID, { secretAccessKey: 'not-the-stored-secret-0000000000000000' });
  const r = await request(`${s.app.url}/v1/proxy/model/${MODEL}/converse`, { headers: { authorization: `Bearer ${tok.token}` }, body: CONVERSE });
  t.is(r.status, 403);
  t.is(s.fake.received.at(-1)!.auth, 'signature mismatch');
  t.regex(String(r.headers['x-amzn-errortype']), /^InvalidSignatureException/);
});

test('only the declared resource parameter admits an encoded slash; traversal inside it and on other providers is still refused', async (t) => {
  const s = await bedrockGateway(t);
  const tok = await bedrockToken(s, 'api_key');
  const before = s.fake.received.length;
  for (const path of ['model/a%2F..%2Fb/converse', 'model/a%2F.%2Fb/converse', 'model/%2Fa/converse', 'model/a%2F/converse', 'model%2Fa/converse', 'model/a/b/converse',
    'model/a%252Fb/converse', 'model/a%5Cb/converse', 'model/..%2Fconverse', 'model/a/converse%2Fx', 'model/a/invoke/..', 'model/.%2E/converse']) {
    const r = await request(`${s.app.url}/v1/proxy/${path}`, { headers: { authorization: `Bearer ${tok.token}` }, body: CONVERSE });
    t.is(r.status, 403, path);
    t.is(r.body?.error?.code, 'path_not_allowed', path);
  }
  t.is(s.fake.received.length, before, 'nothing reached upstream');
});

test('a token scoped to a model id matches the ARN decoded, not its encoded form', async (t) => {
  const s = await bedrockGateway(t);
  const arn = decodeURIComponent(ARN);
  const tok = await bedrockToken(s, 'api_key', { models: [arn] });
  t.is((await request(`${s.app.url}/v1/proxy/model/${ARN}/converse`, { headers: { authorization: `Bearer ${tok.token}` }, body: CONVERSE })).status, 200);
  const other = await request(`${s.app.url}/v1/proxy/model/${MODEL}/converse`, { headers: { authorization: `Bearer ${tok.token}` }, body: CONVERSE });
  t.is(other.status, 403);
});
