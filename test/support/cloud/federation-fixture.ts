/**
 * A gateway that is its organisations' OIDC issuer (KEYWARD_ISSUER_URL = a front relaying to it), wired
 * to fake clouds that verify what Keyward signs: AWS STS + Bedrock, Entra ID + Azure OpenAI, Google STS
 * and iamcredentials + Vertex. Two organisations, A and B; each cloud's trust is set up for A (an IAM
 * role, an Entra app's federated credential, a pool provider and a service account), and helpers store
 * a federated credential of either organisation and mint its proxy token.
 */
import type { ExecutionContext } from 'ava';
import type { Clock } from '../../../src/clock.js';
import { api, createOrg, mintToken, startApp, type Org, type TestApp } from '../app.js';
import { startFakeSts, type FakeSts } from './aws-sts-fake.js';
import { startFakeAzure, type FakeAzure } from './azure-fake.js';
import { startFakeBedrock, type FakeBedrock } from './bedrock-fake.js';
import { startFakeEntra, type FakeEntra } from './entra-fake.js';
import { IssuedTokens } from './google-auth.js';
import { principalOf, startFakeGoogleSts, type FakeGoogleSts } from './google-sts-fake.js';
import { startFakeVertex, type FakeVertex } from './google-vertex.js';
import { startIssuerFront, type IssuerFront } from './keyward-oidc.js';

export const REGION = 'eu-west-3';
export const ROLE_ARN = 'arn:aws:iam::123456789012:role/keyward/org-a-bedrock';
export const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
export const CLIENT_ID = '0f2b6e3a-4c1d-4e5f-9a8b-7c6d5e4f3a2b';
export const RESOURCE = 'my-res';
export const PROJECT = 'my-proj-123';
export const LOCATION = 'us-central1';
export const POOL_PROVIDER = '//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/keyward/providers/org-a';
export const SERVICE_ACCOUNT = 'vertex-caller@my-proj-123.iam.gserviceaccount.com';

export type Cloud = 'bedrock' | 'azure' | 'vertex' | 'vertex-sa';

export interface FederationFixture {
  app: TestApp;
  front: IssuerFront;
  orgA: Org;
  orgB: Org;
  bedrock: FakeBedrock;
  sts: FakeSts;
  entra: FakeEntra;
  azure: FakeAzure;
  google: FakeGoogleSts;
  vertex: FakeVertex;
  issued: IssuedTokens;
  /** The body of a federated credential of this cloud, aimed at organisation A's trust. */
  body(cloud: Cloud): Record<string, unknown>;
  /** Stores `org`'s federated credential for `cloud` (A's role, app or pool unless `extra` says otherwise) and mints a token. */
  credential(org: Org, cloud: Cloud, extra?: Record<string, unknown>): Promise<{ credentialId: string; token: string; tokenId: string }>;
  proxyUrl(path: string): string;
}

export async function federationFixture(t: ExecutionContext, options: { clock?: Clock; env?: Record<string, string> } = {}): Promise<FederationFixture> {
  const { clock } = options;
  const front = await startIssuerFront(t);
  const bedrock = await startFakeBedrock();
  t.teardown(() => bedrock.close());
  const sts = await startFakeSts(t, bedrock, clock);
  const entra = await startFakeEntra(t, clock);
  const azure = await startFakeAzure('no-stored-key-is-used-here-0123456789', entra.tokens);
  t.teardown(() => azure.close());
  const issued = new IssuedTokens();
  const google = await startFakeGoogleSts(t, issued, clock);
  const vertex = await startFakeVertex(issued);
  t.teardown(() => vertex.close());
  const app = await startApp(t, {
    ...(clock ? { clock } : {}),
    env: {
      KEYWARD_ISSUER_URL: front.url,
      AWS_ENDPOINT_URL_STS: sts.url,
      AZURE_AUTHORITY_HOST: entra.url,
      KEYWARD_GOOGLE_STS_URI: google.stsUri,
      KEYWARD_GOOGLE_IAM_CREDENTIALS_URI: google.url,
      KEYWARD_UPSTREAM_BEDROCK: bedrock.url,
      KEYWARD_UPSTREAM_AZURE: azure.url,
      KEYWARD_UPSTREAM_VERTEX: vertex.url,
      ...options.env,
    },
  });
  front.point(app.url);
  const orgA = await createOrg(app, 'org-a');
  const orgB = await createOrg(app, 'org-b');
  const subjectA = `org:${orgA.id}`;
  // Organisation A's trust in each cloud, as docs/operate/identity.md sets it up.
  sts.providers.add(front.url);
  sts.roles.set(ROLE_ARN, { issuer: front.url, subject: subjectA });
  entra.apps.set(CLIENT_ID, { tenant: TENANT, federated: [{ issuer: front.url, subject: subjectA, audiences: ['api://AzureADTokenExchange'] }] });
  google.providers.set(POOL_PROVIDER, { issuer: front.url, subject: subjectA });
  google.serviceAccounts.set(SERVICE_ACCOUNT, new Set([principalOf(POOL_PROVIDER, subjectA)]));

  const body = (cloud: Cloud): Record<string, unknown> => {
    switch (cloud) {
      case 'bedrock':
        return { provider: 'bedrock', region: REGION, role_arn: ROLE_ARN, federated: true };
      case 'azure':
        return { provider: 'azure', resource: RESOURCE, tenant_id: TENANT, client_id: CLIENT_ID, federated: 'true' };
      case 'vertex':
        return { provider: 'vertex', project: PROJECT, location: LOCATION, workload_identity_provider: POOL_PROVIDER, federated: true };
      case 'vertex-sa':
        return { provider: 'vertex', project: PROJECT, location: LOCATION, workload_identity_provider: POOL_PROVIDER, service_account: SERVICE_ACCOUNT, federated: true };
    }
  };
  return {
    app, front, orgA, orgB, bedrock, sts, entra, azure, google, vertex, issued, body,
    async credential(org, cloud, extra = {}) {
      const made = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { ...body(cloud), ...extra } });
      if (made.status !== 201) throw new Error(`federated credential create failed: ${made.status} ${made.text}`);
      const tok = await mintToken(app, org, made.body.id, '1d');
      return { credentialId: made.body.id, token: tok.token, tokenId: tok.id };
    },
    proxyUrl: (path) => `${app.url}/v1/proxy/${path}`,
  };
}
