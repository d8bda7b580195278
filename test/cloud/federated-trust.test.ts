/**
 * Who a cloud trusts: organisations are isolated by `sub` (a role, app or pool provider that trusts
 * org:A refuses what Keyward signs for org B, and the caller gets 502 upstream_auth_failed with the
 * cloud's own words, never upstream_unreachable, nothing forwarded or counted), and each fake cloud
 * refuses a JWT signed by a key Keyward does not publish, whatever `kid` it names, while Keyward's own
 * JWT passes the same fake.
 */
import test from 'ava';
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import { STSClient, AssumeRoleWithWebIdentityCommand } from '@aws-sdk/client-sts';
import { api } from '../support/app.js';
import { federationFixture, POOL_PROVIDER, SERVICE_ACCOUNT, ROLE_ARN, type Cloud, type FederationFixture } from '../support/cloud/federation-fixture.js';
import { principalOf } from '../support/cloud/google-sts-fake.js';
import { request, type Reply } from '../support/request.js';

const REQUEST: Record<'bedrock' | 'azure' | 'vertex', { path: string; body: unknown }> = {
  bedrock: { path: 'model/anthropic.claude-3-5-sonnet-20240620-v1:0/converse', body: { messages: [{ role: 'user', content: [{ text: 'hi' }] }] } },
  azure: { path: 'openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21', body: { messages: [{ role: 'user', content: 'hi' }] } },
  vertex: { path: 'v1/projects/my-proj-123/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent', body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] } },
};

/** The cloud's request through the proxy with `token`. */
function call(f: FederationFixture, cloud: Cloud, token: string): Promise<Reply> {
  const r = REQUEST[cloud === 'vertex-sa' ? 'vertex' : cloud];
  return request(f.proxyUrl(r.path), { headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(r.body) });
}

const upstreamCount = (f: FederationFixture) => f.bedrock.received.length + f.azure.received.length + f.vertex.received.length;
const jwtsSeen = (f: FederationFixture) => [...f.sts.jwts, ...f.entra.assertions, ...f.google.subjectTokens];

const REFUSALS: Record<Cloud, RegExp> = {
  bedrock: /^AWS STS refused AssumeRoleWithWebIdentity: AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity/,
  azure: /^Entra ID refused the grant: HTTP 400 invalid_client: AADSTS700213: No matching federated identity record found for presented assertion subject 'org:org_/,
  vertex: /^Google STS refused: HTTP 400 .*unauthorized_client.*rejected by the attribute condition/,
  'vertex-sa': /^Google STS refused: HTTP 400 .*unauthorized_client.*rejected by the attribute condition/,
};

for (const cloud of ['bedrock', 'azure', 'vertex', 'vertex-sa'] as const) {
  test(`${cloud}: a trust for org:A refuses org B: 502 upstream_auth_failed with the cloud's words, nothing forwarded or counted; org A is served`, async (t) => {
    const f = await federationFixture(t);
    const b = await f.credential(f.orgB, cloud);
    for (let i = 0; i < 2; i++) {
      const r = await call(f, cloud, b.token);
      t.is(r.status, 502);
      t.is(r.body.error.type, 'upstream');
      t.is(r.body.error.code, 'upstream_auth_failed');
      t.regex(r.body.error.message, REFUSALS[cloud]);
      for (const jwt of jwtsSeen(f)) t.false(r.text.includes(jwt), 'the JWT is not in the answer');
    }
    t.is(upstreamCount(f), 0, 'nothing reached the provider');
    t.is((await api(f.app, 'GET', '/v1/usage', { token: f.orgB.token })).body.proxy_requests.used, 0, 'a refused exchange does not count');
    t.true(f.app.logText().includes('could not be minted'), 'the refusal is logged');
    const a = await f.credential(f.orgA, cloud);
    t.is((await call(f, cloud, a.token)).status, 200, 'the organisation the cloud trusts is served');
  });
}

test('vertex: STS admits org B at its own pool provider, and iamcredentials refuses it org A\'s service account (403 PERMISSION_DENIED → 502 upstream_auth_failed)', async (t) => {
  const f = await federationFixture(t);
  const providerB = POOL_PROVIDER.replace('/providers/org-a', '/providers/org-b');
  f.google.providers.set(providerB, { issuer: f.front.url, subject: `org:${f.orgB.id}` });
  const b = await f.credential(f.orgB, 'vertex-sa', { workload_identity_provider: providerB });
  const r = await call(f, 'vertex-sa', b.token);
  t.is(r.status, 502);
  t.is(r.body.error.code, 'upstream_auth_failed');
  t.regex(r.body.error.message, /^Google iamcredentials refused: HTTP 403 PERMISSION_DENIED: Permission 'iam.serviceAccounts.getAccessToken' denied/);
  t.is(f.google.exchanges, 1);
  t.is(f.google.impersonations, 1);
  // Granting org B's principal the role is what lets it act as the account.
  f.google.serviceAccounts.get(SERVICE_ACCOUNT)!.add(principalOf(providerB, `org:${f.orgB.id}`));
  t.is((await call(f, 'vertex-sa', b.token)).status, 200);
});

/** A JWT exactly like Keyward's for org A, signed by a key Keyward does not publish, naming `kid`. */
async function forged(f: FederationFixture, audience: string, kid: string): Promise<string> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ keyward_credential: 'cred_forged' }).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid })
    .setIssuer(f.front.url).setSubject(`org:${f.orgA.id}`).setAudience(audience).setIssuedAt(now).setNotBefore(now).setExpirationTime(now + 300).sign(privateKey);
}

test('each fake refuses a JWT signed by a key Keyward does not publish (a stranger kid, or Keyward\'s own kid), and accepts Keyward\'s own', async (t) => {
  const f = await federationFixture(t);
  // Keyward's own JWTs, as each cloud received them from a served request.
  for (const cloud of ['bedrock', 'azure', 'vertex'] as const) t.is((await call(f, cloud, (await f.credential(f.orgA, cloud)).token)).status, 200);
  const published = (await api(f.front.url, 'GET', '/.well-known/jwks.json')).body.keys as Array<{ kid: string }>;
  t.is(published.length, 1);
  const presenters = {
    'AWS STS': async (jwt: string) => {
      const sts = new STSClient({ region: 'eu-west-3', endpoint: f.sts.url, credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
      try {
        await sts.send(new AssumeRoleWithWebIdentityCommand({ RoleArn: ROLE_ARN, RoleSessionName: 'test', WebIdentityToken: jwt }));
        return 'accepted';
      } catch (err) {
        return (err as Error).name;
      } finally {
        sts.destroy();
      }
    },
    'Entra ID': async (jwt: string) => {
      const r = await fetch(`${f.entra.url}/72f988bf-86f1-41af-91ab-2d7cd011db47/oauth2/v2.0/token`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: '0f2b6e3a-4c1d-4e5f-9a8b-7c6d5e4f3a2b', scope: 'https://cognitiveservices.azure.com/.default', grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: jwt }),
      });
      return r.status === 200 ? 'accepted' : String(((await r.json()) as { error_codes: number[] }).error_codes[0]);
    },
    'Google STS': async (jwt: string) => {
      const r = await fetch(f.google.stsUri, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', audience: POOL_PROVIDER, subject_token_type: 'urn:ietf:params:oauth:token-type:jwt', subject_token: jwt, requested_token_type: 'urn:ietf:params:oauth:token-type:access_token', scope: 'https://www.googleapis.com/auth/cloud-platform' }),
      });
      return r.status === 200 ? 'accepted' : ((await r.json()) as { error: string }).error;
    },
  };
  const own = { 'AWS STS': f.sts.jwts[0]!, 'Entra ID': f.entra.assertions[0]!, 'Google STS': f.google.subjectTokens[0]! };
  const audiences = { 'AWS STS': 'sts.amazonaws.com', 'Entra ID': 'api://AzureADTokenExchange', 'Google STS': POOL_PROVIDER };
  const refusedAs = { 'AWS STS': 'InvalidIdentityTokenException', 'Entra ID': '700211', 'Google STS': 'invalid_grant' };
  for (const [name, present] of Object.entries(presenters) as Array<[keyof typeof presenters, (jwt: string) => Promise<string>]>) {
    t.is(await present(own[name]), 'accepted', `${name}: Keyward's own JWT`);
    t.is(await present(await forged(f, audiences[name], published[0]!.kid)), refusedAs[name], `${name}: another key under Keyward's kid`);
    t.is(await present(await forged(f, audiences[name], 'not-published')), refusedAs[name], `${name}: a kid Keyward does not publish`);
  }
});
