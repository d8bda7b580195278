/**
 * Cold start does not grow with federation: an issuer gateway serving ordinary requests never loads the cloud
 * clients (@aws-sdk/client-sts, google-auth-library) nor the KMS client; each is imported by Keyward's own files
 * on its first federated exchange only.
 */
import test from 'ava';
import { registerHooks } from 'node:module';

// Every module this worker resolves from now on, with who asked (registered before the app is imported).
const resolved: Array<{ specifier: string; parent: string }> = [];
registerHooks({
  resolve(specifier, context, next) {
    resolved.push({ specifier, parent: context.parentURL ?? '' });
    return next(specifier, context);
  },
});
const SRC = new URL('../../src', import.meta.url).href;
const CLIENTS = ['@aws-sdk/client-sts', 'google-auth-library', '@google-cloud/kms'];
/** The cloud clients Keyward's own source files have imported so far. */
const loaded = () => [...new Set(resolved.filter((r) => r.parent.startsWith(SRC) && CLIENTS.includes(r.specifier)).map((r) => r.specifier))].sort();

test.serial('an issuer gateway loads no cloud client until a federated credential is first used, then only that cloud\'s', async (t) => {
  const { federationFixture } = await import('../support/cloud/federation-fixture.js');
  const { api } = await import('../support/app.js');
  const f = await federationFixture(t);
  t.is((await api(f.app, 'GET', '/.well-known/jwks.json')).status, 200);
  const azure = await f.credential(f.orgA, 'azure');
  const chat = (token: string) => fetch(f.proxyUrl('openai/deployments/d/chat/completions?api-version=2024-10-21'), {
    method: 'POST', headers: { 'api-key': token, 'content-type': 'application/json' }, body: JSON.stringify({ messages: [] }),
  });
  t.is((await chat(azure.token)).status, 200, 'Entra ID is the documented request: no client');
  t.true(resolved.some((r) => r.parent.startsWith(SRC)), 'the hook sees Keyward\'s own imports');
  t.deepEqual(loaded(), []);
  const bedrock = await f.credential(f.orgA, 'bedrock');
  const r = await fetch(f.proxyUrl('model/anthropic.claude-3-5-sonnet-20240620-v1:0/converse'), {
    method: 'POST', headers: { authorization: `Bearer ${bedrock.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ messages: [] }),
  });
  t.is(r.status, 200);
  t.deepEqual(loaded(), ['@aws-sdk/client-sts']);
  const vertex = await f.credential(f.orgA, 'vertex');
  const g = await fetch(f.proxyUrl('v1/projects/my-proj-123/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent'), {
    method: 'POST', headers: { authorization: `Bearer ${vertex.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ contents: [] }),
  });
  t.is(g.status, 200);
  t.deepEqual(loaded(), ['@aws-sdk/client-sts', 'google-auth-library']);
});
