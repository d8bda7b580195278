/**
 * Workload identity on KEYWARD_STORE=firestore (the in-process emulator): a trust policy made
 * through one instance is used by an exchange on another, whose ptok is proxied there.
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import type { FirestoreStore } from '../../src/store/firestore/firestore-store.js';
import { Symbols } from '../../src/symbols.js';
import { api, createCredential, createOrg, startApp } from '../support/app.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { startFakeProvider, WORDS } from '../support/fake-provider.js';
import { startIssuer } from '../support/oidc-issuer.js';
import { AUDIENCE, GRANT, JWT_TYPE } from './_setup.js';

test('KEYWARD_STORE=firestore: a policy made on one instance serves an exchange on another; the ptok works there', async (t) => {
  const emulator = await startEmulator(t);
  const issuer = await startIssuer();
  t.teardown(() => issuer.close());
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const env = {
    KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulator.host, KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'),
    KEYWARD_OIDC_ISSUERS: issuer.url, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1', KEYWARD_UPSTREAM_OPENAI: fake.url,
  };
  const [a, b] = await Promise.all([startApp(t, { env }), startApp(t, { env })]);
  for (const app of [a!, b!]) emulator.adopt(app.server.container.resolve<FirestoreStore>(Symbols.Store));

  const org = await createOrg(a!);
  const cred = await createCredential(a!, org, 'openai', 'sk-firestore-0123456789abcdef');
  const made = await api(a!, 'POST', '/v1/trust-policies', {
    token: org.token, body: { issuer: issuer.url, audience: AUDIENCE, subject: 'repo:acme/*', credential_id: cred, ttl: '5m', max_requests: 2 },
  });
  t.is(made.status, 201, made.text);
  t.deepEqual((await api(b!, 'GET', `/v1/trust-policies/${made.body.id}`, { token: org.token })).body, made.body);

  const jwt = await issuer.sign(Date.now());
  const exchanged = await api(b!, 'POST', '/v1/tokens/exchange', { body: { grant_type: GRANT, subject_token: jwt, subject_token_type: JWT_TYPE } });
  t.is(exchanged.status, 200, exchanged.text);
  t.is(exchanged.body.expires_in, 300);
  const named = await api(b!, 'POST', '/v1/tokens/exchange', { body: { grant_type: GRANT, subject_token: jwt, subject_token_type: JWT_TYPE, policy_id: made.body.id } });
  t.is(named.status, 200, named.text);

  const res = await fetch(`${b!.url}/v1/proxy/v1/chat/completions`, {
    method: 'POST', headers: { 'x-proxy-token': exchanged.body.access_token, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.is(res.status, 200);
  t.is((await res.json() as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, WORDS.slice(0, 3).join(''));

  t.is((await api(a!, 'DELETE', `/v1/trust-policies/${made.body.id}`, { token: org.token })).status, 200);
  const after = await api(b!, 'POST', '/v1/tokens/exchange', { body: { grant_type: GRANT, subject_token: jwt, subject_token_type: JWT_TYPE } });
  t.is(after.body.error, 'invalid_grant');
});
