/**
 * A gateway wired to the fake Google token endpoint, metadata server and Vertex: a
 * service-account credential (`sa`) and an ambient one, each with a proxy token ready.
 */
import type { ExecutionContext } from 'ava';
import type { Clock } from '../../../src/clock.js';
import { api, createOrg, mintToken, startApp, type Org, type TestApp } from '../app.js';
import { IssuedTokens, newServiceAccount, startFakeGoogleAuth, type FakeGoogleAuth, type ServiceAccount } from './google-auth.js';
import { startFakeVertex, type FakeVertex } from './google-vertex.js';

export const PROJECT = 'my-proj-123';
export const LOCATION = 'us-central1';

export interface VertexFixture {
  app: TestApp;
  google: FakeGoogleAuth;
  vertex: FakeVertex;
  sa: ServiceAccount;
  org: Org;
  credentials: { sa: string; ambient: string };
  tokens: { sa: { id: string; token: string }; ambient: { id: string; token: string } };
  /** `${app.url}/v1/proxy/` + path */
  proxyUrl(path: string): string;
  /** A Gemini path under the credential's project and location. */
  geminiPath(action: string, version?: string, project?: string, location?: string): string;
}

export async function vertexFixture(t: ExecutionContext, env: Record<string, string> = {}, clock?: Clock): Promise<VertexFixture> {
  const issued = new IssuedTokens();
  const sa = newServiceAccount(PROJECT);
  const google = await startFakeGoogleAuth([sa], issued, clock);
  t.teardown(() => google.close());
  const vertex = await startFakeVertex(issued);
  t.teardown(() => vertex.close());
  const app = await startApp(t, {
    ...(clock ? { clock } : {}),
    env: { KEYWARD_UPSTREAM_VERTEX: vertex.url, KEYWARD_GOOGLE_TOKEN_URI: google.tokenUri, GCE_METADATA_HOST: google.metadataHost, KEYWARD_AMBIENT_PROJECTS: PROJECT, ...env },
  });
  const org = await createOrg(app);
  const create = async (body: Record<string, unknown>): Promise<string> => {
    const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'vertex', project: PROJECT, location: LOCATION, ...body } });
    if (r.status !== 201) throw new Error(`credential create failed: ${r.status} ${r.text}`);
    return r.body.id;
  };
  const credentials = { sa: await create({ service_account: sa.json }), ambient: await create({ ambient: 'true' }) };
  const tokens = { sa: await mintToken(app, org, credentials.sa), ambient: await mintToken(app, org, credentials.ambient) };
  return {
    app, google, vertex, sa, org, credentials, tokens,
    proxyUrl: (path) => `${app.url}/v1/proxy/${path}`,
    geminiPath: (action, version = 'v1', project = PROJECT, location = LOCATION) =>
      `${version}/projects/${project}/locations/${location}/publishers/google/models/gemini-2.5-flash:${action}`,
  };
}
