import 'reflect-metadata';
import test from 'ava';
import { createHash, createHmac } from 'node:crypto';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DeploymentSecrets, IDEMPOTENCY_HMAC_KEY } from '../../src/vault/deployment-secrets.js';
import { ADMIN_TOKEN, api, createOrg, startApp } from '../support/app.js';

test('the same Idempotency-Key and body replays the first response, without the shown-once token', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-idem-0123456789' }, headers: { 'idempotency-key': 'cred-1' } });
  t.is(cred.status, 201);
  t.is(cred.headers.get('idempotent-replayed'), null);
  const again = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-idem-0123456789' }, headers: { 'idempotency-key': 'cred-1' } });
  t.is(again.status, 201);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.deepEqual(again.body, cred.body);
  const list = await api(app, 'GET', '/v1/credentials', { token: org.token });
  t.is(list.body.data.length, 1, 'the retry created nothing');

  const tok = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred.body.id, ttl: '5m' }, headers: { 'idempotency-key': 'tok-1' } });
  t.is(tok.status, 201);
  t.regex(tok.body.token, /^ptok_/);
  const replay = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred.body.id, ttl: '5m' }, headers: { 'idempotency-key': 'tok-1' } });
  t.is(replay.status, 201);
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.is(replay.body.id, tok.body.id);
  t.is(replay.body.token, undefined, 'a secret shown once is never stored to be shown again');
  t.false(replay.text.includes(tok.body.token));
  const tokens = await api(app, 'GET', '/v1/tokens', { token: org.token });
  t.is(tokens.body.data.length, 1);

  // The org itself, made with the admin token.
  const o1 = await api(app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body: { name: 'beta' }, headers: { 'idempotency-key': 'org-beta' } });
  const o2 = await api(app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body: { name: 'beta' }, headers: { 'idempotency-key': 'org-beta' } });
  t.is(o2.body.id, o1.body.id);
  t.is(o2.body.token, undefined);
});

test('the same key with another body is a 409 idempotency_conflict; keys are per organisation and per endpoint', async (t) => {
  const app = await startApp(t);
  const a = await createOrg(app, 'a');
  const b = await createOrg(app, 'b');
  const first = await api(app, 'POST', '/v1/credentials', { token: a.token, body: { provider: 'openai', api_key: 'sk-first-0123456789' }, headers: { 'idempotency-key': 'k' } });
  t.is(first.status, 201);
  const conflict = await api(app, 'POST', '/v1/credentials', { token: a.token, body: { provider: 'openai', api_key: 'sk-other-0123456789' }, headers: { 'idempotency-key': 'k' } });
  t.is(conflict.status, 409);
  t.deepEqual(conflict.body.error.code, 'idempotency_conflict');
  t.is(conflict.body.error.type, 'invalid_request');
  // Org B's identical key is its own.
  const other = await api(app, 'POST', '/v1/credentials', { token: b.token, body: { provider: 'openai', api_key: 'sk-first-0123456789' }, headers: { 'idempotency-key': 'k' } });
  t.is(other.status, 201);
  t.not(other.body.id, first.body.id);
  t.is(other.headers.get('idempotent-replayed'), null);
  // A failed request stores nothing: the key can be used again once the input is right.
  const bad = await api(app, 'POST', '/v1/tokens', { token: a.token, body: { credential_id: first.body.id, ttl: '0m' }, headers: { 'idempotency-key': 't' } });
  t.is(bad.status, 400);
  const good = await api(app, 'POST', '/v1/tokens', { token: a.token, body: { credential_id: first.body.id, ttl: '1m' }, headers: { 'idempotency-key': 't' } });
  t.is(good.status, 201);
  t.regex(good.body.token, /^ptok_/);
  const badKey = await api(app, 'POST', '/v1/tokens', { token: a.token, body: { credential_id: first.body.id, ttl: '1m' }, headers: { 'idempotency-key': 'x'.repeat(300) } });
  t.is(badKey.status, 400);
});

test('concurrent first requests with one key create exactly one resource', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const results = await Promise.all(Array.from({ length: 10 }, () =>
    api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-race-0123456789' }, headers: { 'idempotency-key': 'race' } })));
  const created = results.filter((r) => r.status === 201);
  t.true(created.length >= 1);
  t.is(new Set(created.map((r) => r.body.id)).size, 1);
  for (const r of results) t.true(r.status === 201 || r.status === 409, `status ${r.status}`);
  const list = await api(app, 'GET', '/v1/credentials', { token: org.token });
  t.is(list.body.data.length, 1);
});

test('the stored request hash is an HMAC under a secret of the deployment, never a plain hash of a body that carries a key', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const body = { provider: 'openai', api_key: 'sk-hashed-0123456789' };
  const res = await api(app, 'POST', '/v1/credentials', { token: org.token, body, headers: { 'idempotency-key': 'h-1' } });
  t.is(res.status, 201);
  const raw = Buffer.from(JSON.stringify(body));
  const db = new DatabaseSync(path.join(app.dataDir, 'keyward.db'), { readOnly: true });
  t.teardown(() => db.close());
  const rows = db.prepare('SELECT request_hash FROM idempotency').all() as Array<{ request_hash: string }>;
  t.is(rows.length, 1);
  const stored = rows[0]!.request_hash;
  t.not(stored, createHash('sha256').update(raw).digest('hex'));
  const secret = await app.server.container.resolve(DeploymentSecrets).get(IDEMPOTENCY_HMAC_KEY);
  t.is(stored, createHmac('sha256', secret).update(raw).digest('hex'));
  // The secret itself is stored only wrapped.
  const meta = db.prepare('SELECT wrapped FROM meta').all() as Array<{ wrapped: Uint8Array }>;
  t.is(meta.length, 1);
  t.false(Buffer.from(meta[0]!.wrapped).includes(secret));
});

test('two gateways on one data dir agree: a key used on one replays (or conflicts) on the other, from the first request on', async (t) => {
  const one = await startApp(t);
  const two = await startApp(t, { dataDir: one.dataDir });
  const org = await createOrg(one);
  const body = (n: number) => ({ provider: 'openai', api_key: `sk-two-gateways-${n}-0123456789` });
  // Both make their first idempotent request at once: neither has the secret yet.
  const [a, b] = await Promise.all([
    api(one, 'POST', '/v1/credentials', { token: org.token, body: body(1), headers: { 'idempotency-key': 'k-1' } }),
    api(two, 'POST', '/v1/credentials', { token: org.token, body: body(2), headers: { 'idempotency-key': 'k-2' } }),
  ]);
  t.is(a.status, 201);
  t.is(b.status, 201);
  const replayA = await api(two, 'POST', '/v1/credentials', { token: org.token, body: body(1), headers: { 'idempotency-key': 'k-1' } });
  t.is(replayA.headers.get('idempotent-replayed'), 'true');
  t.is(replayA.body.id, a.body.id);
  const replayB = await api(one, 'POST', '/v1/credentials', { token: org.token, body: body(2), headers: { 'idempotency-key': 'k-2' } });
  t.is(replayB.headers.get('idempotent-replayed'), 'true');
  t.is(replayB.body.id, b.body.id);
  const conflict = await api(one, 'POST', '/v1/credentials', { token: org.token, body: body(3), headers: { 'idempotency-key': 'k-2' } });
  t.is(conflict.status, 409);
  // After a restart, too.
  await one.stop();
  const three = await startApp(t, { dataDir: one.dataDir });
  const replayC = await api(three, 'POST', '/v1/credentials', { token: org.token, body: body(1), headers: { 'idempotency-key': 'k-1' } });
  t.is(replayC.headers.get('idempotent-replayed'), 'true');
  t.is(replayC.body.id, a.body.id);
});
