import 'reflect-metadata';
import test from 'ava';
import { CredentialService } from '../../src/vault/credential-service.js';
import { newToken, randomBase62 } from '../../src/ids.js';
import { TokenService } from '../../src/vault/token-service.js';
import { ADMIN_TOKEN, api, createOrg, startApp } from '../support/app.js';

test('no key or token value appears in any log line, at debug level, through every admin endpoint and error path', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_LOG_LEVEL: 'debug', KEYWARD_FREE_CREDENTIALS: '2' } });
  const org = await createOrg(app);
  const secrets: string[] = [ADMIN_TOKEN, org.token];
  const key = () => {
    const k = `sk-logtest-${randomBase62(32)}`;
    secrets.push(k);
    return k;
  };
  const c1 = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: key() } });
  const c2 = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'anthropic', api_key: key() } });
  t.is(c1.status, 201);
  // Refused requests that carry a key: over the limit, unknown provider, unknown field, bad JSON, rotate of a missing id.
  t.is((await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: key() } })).status, 403);
  t.is((await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'nope', api_key: key() } })).status, 400);
  t.is((await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: key(), x: 1 } })).status, 400);
  t.is((await api(app, 'POST', '/v1/credentials', { token: org.token, rawBody: `{"provider":"openai","api_key":"${key()}"`, headers: { 'content-type': 'application/json' } })).status, 400);
  t.is((await api(app, 'POST', '/v1/credentials/cred_AAAAAAAAAAAAAAAAAAAAAAAA/rotate', { token: org.token, body: { api_key: key() } })).status, 404);
  t.is((await api(app, 'POST', `/v1/credentials/${c1.body.id}/rotate`, { token: org.token, body: { api_key: key() } })).status, 200);

  const tok = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: c2.body.id, ttl: '1h' } });
  t.is(tok.status, 201);
  secrets.push(tok.body.token);
  await api(app, 'GET', '/v1/tokens', { token: org.token });
  await api(app, 'GET', `/v1/tokens/${tok.body.id}`, { token: org.token });
  await api(app, 'GET', '/v1/credentials', { token: org.token });
  await api(app, 'GET', '/v1/usage', { token: org.token });
  // Presented but wrong secrets are secrets too.
  const wrongOtok = newToken('otok');
  const wrongPtok = newToken('ptok');
  secrets.push(wrongOtok, wrongPtok, 'wrong-admin-token-0123456789');
  await api(app, 'GET', '/v1/credentials', { token: wrongOtok });
  await api(app, 'GET', '/v1/credentials', { token: wrongPtok });
  await api(app, 'POST', '/v1/orgs', { token: 'wrong-admin-token-0123456789', body: { name: 'x' } });
  await api(app, 'POST', '/v1/orgs', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { name: 'ok' } }).then((r) => secrets.push(r.body.token));
  const rot = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 0 } });
  secrets.push(rot.body.token);
  // The vault's own paths: decrypting, resolving, a tampered-looking failure.
  const credentials = app.server.container.resolve(CredentialService);
  await credentials.keyFor({ orgId: org.id, id: c2.body.id, provider: 'anthropic' });
  await app.server.container.resolve(TokenService).resolve(tok.body.token);
  await app.server.container.resolve(TokenService).resolve(wrongPtok);
  t.is((await api(app, 'DELETE', `/v1/tokens/${tok.body.id}`, { token: rot.body.token })).status, 200);
  t.is((await api(app, 'DELETE', `/v1/credentials/${c1.body.id}`, { token: rot.body.token })).status, 200);
  await app.stop();

  const logs = app.logText();
  t.true(logs.length > 0, 'debug logging produced lines');
  for (const s of secrets) {
    t.false(logs.includes(s), `${s.slice(0, 8)}… was logged`);
    t.false(logs.includes(Buffer.from(s).toString('base64')));
  }
  t.false(/sk-logtest-|ptok_[0-9A-Za-z]{10}|otok_[0-9A-Za-z]{10}/.test(logs));
  // Every line is one JSON object with the Cloud Logging fields.
  for (const line of logs.split('\n').filter(Boolean)) {
    const o = JSON.parse(line);
    t.is(typeof o.severity, 'string');
    t.is(typeof o.message, 'string');
    t.is(typeof o.time, 'string');
  }
});
