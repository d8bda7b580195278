/**
 * A gateway whose `bedrock` provider points at a fake Bedrock (KEYWARD_UPSTREAM_BEDROCK),
 * with one org and helpers to store a Bedrock credential (key pair, with or without a
 * session token, or an API key) and mint a token for it.
 */
import type { ExecutionContext } from 'ava';
import { api, createOrg, mintToken, startApp, type Org, type TestApp } from '../app.js';
import { startFakeBedrock, type FakeBedrock } from './bedrock-fake.js';

export const REGION = 'eu-west-3';
export const ACCESS_KEY_ID = 'AKIAKEYWARDTEST0001';
export const SECRET_ACCESS_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9secret01';
export const SESSION_TOKEN = 'IQoJb3JpZ2luX2VjEKEYWARDsessiontoken0123456789';
export const API_KEY = 'ABSKbedrockapikey0123456789abcdefKEYWARD';

export interface BedrockSetup {
  app: TestApp;
  fake: FakeBedrock;
  org: Org;
}

export async function bedrockGateway(t: ExecutionContext): Promise<BedrockSetup> {
  const fake = await startFakeBedrock();
  t.teardown(() => fake.close());
  fake.keys.set(ACCESS_KEY_ID, { secretAccessKey: SECRET_ACCESS_KEY });
  fake.apiKeys.add(API_KEY);
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_BEDROCK: fake.url } });
  return { app, fake, org: await createOrg(app) };
}

export type BedrockAuth = 'keys' | 'session' | 'api_key';

/** Stores a Bedrock credential of that kind and mints a token for it. */
export async function bedrockToken(s: BedrockSetup, kind: BedrockAuth, extra: Record<string, unknown> = {}): Promise<{ id: string; token: string; credentialId: string }> {
  const fields = kind === 'api_key' ? { api_key: API_KEY }
    : { aws_access_key_id: ACCESS_KEY_ID, aws_secret_access_key: SECRET_ACCESS_KEY, ...(kind === 'session' ? { aws_session_token: SESSION_TOKEN } : {}) };
  if (kind === 'session') s.fake.keys.set(ACCESS_KEY_ID, { secretAccessKey: SECRET_ACCESS_KEY, sessionToken: SESSION_TOKEN });
  const r = await api(s.app, 'POST', '/v1/credentials', { token: s.org.token, body: { provider: 'bedrock', region: REGION, ...fields } });
  if (r.status !== 201) throw new Error(`credential create failed: ${r.status} ${r.text}`);
  const tok = await mintToken(s.app, s.org, r.body.id, '15m', extra);
  return { ...tok, credentialId: r.body.id };
}
