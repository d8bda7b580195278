/**
 * A Bedrock pool of two regions: one region's 503 fails over to the other, each attempt SigV4-signed for its
 * own member's region and key, verified independently by the fake Bedrock (test/support/cloud/bedrock-fake.ts
 * recomputes every signature with aws4), and the body replayed byte for byte.
 */
import test from 'ava';
import { api, mintToken } from '../support/app.js';
import { request } from '../support/request.js';
import { ACCESS_KEY_ID, bedrockGateway, SECRET_ACCESS_KEY } from '../support/cloud/bedrock-setup.js';

const CONVERSE = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hello' }] }], inferenceConfig: { maxTokens: 100 } });
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1%3A0';
const SECOND_KEY = 'AKIAKEYWARDTEST0002';
const SECOND_SECRET = 'sEcOnDsEcReTkEyOfTheSecondRegion0000000000';

test('a Bedrock pool of two regions fails over from one region\'s 503 to the other, signed for each region', async (t) => {
  const s = await bedrockGateway(t);
  s.fake.keys.set(SECOND_KEY, { secretAccessKey: SECOND_SECRET });
  const east = await api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: { provider: 'bedrock', region: 'us-east-1', aws_access_key_id: ACCESS_KEY_ID, aws_secret_access_key: SECRET_ACCESS_KEY } });
  const west = await api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: { provider: 'bedrock', region: 'us-west-2', aws_access_key_id: SECOND_KEY, aws_secret_access_key: SECOND_SECRET } });
  const pool = await api(s.app, 'POST', '/v1/pools', { token: s.org.token, body: { strategy: 'ordered', members: [{ credential_id: east.body.id }, { credential_id: west.body.id }] } });
  t.is(pool.status, 201);
  t.is(pool.body.provider, 'bedrock');
  const tok = await api(s.app, 'POST', '/v1/tokens', { token: s.org.token, body: { pool_id: pool.body.id, ttl: '15m' } });
  s.fake.failRegions.set('us-east-1', 503);

  const r = await request(`${s.app.url}/v1/proxy/model/${MODEL}/converse`, { headers: { authorization: `Bearer ${tok.body.token}` }, body: CONVERSE });
  t.is(r.status, 200, r.text);
  t.is(r.headers['x-keyward-attempts'], '2');
  const [first, second] = s.fake.received.slice(-2);
  t.is(first!.auth, 'sigv4', 'the first attempt\'s signature verified');
  t.regex(String(first!.headers.authorization), new RegExp(`Credential=${ACCESS_KEY_ID}/\\d{8}/us-east-1/bedrock/aws4_request`));
  t.is(second!.auth, 'sigv4', 'the second attempt re-signed and verified');
  t.regex(String(second!.headers.authorization), new RegExp(`Credential=${SECOND_KEY}/\\d{8}/us-west-2/bedrock/aws4_request`));
  t.is(first!.body.toString(), CONVERSE);
  t.is(second!.body.toString(), CONVERSE, 'the body replayed as signed');

  // A wrong second secret is refused by the fake: the verifier is not a rubber stamp.
  s.fake.keys.set(SECOND_KEY, { secretAccessKey: 'not-the-stored-secret-0000000000000000' });
  const lone = await mintToken(s.app, s.org, west.body.id);
  const refused = await request(`${s.app.url}/v1/proxy/model/${MODEL}/converse`, { headers: { authorization: `Bearer ${lone.token}` }, body: CONVERSE });
  t.is(refused.status, 403);
  t.is(s.fake.received.at(-1)!.auth, 'signature mismatch');
});
