import 'reflect-metadata';
import test from 'ava';
import { CredentialService } from '../../src/vault/credential-service.js';
import { newToken } from '../../src/ids.js';
import { TokenService } from '../../src/vault/token-service.js';
import { api, createCredential, createOrg, mintToken, startApp, type TestApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';

const tokens = (app: TestApp) => app.server.container.resolve(TokenService);

test('resolve: a live token resolves to its record and credential', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'anthropic', 'sk-ant-test-resolve-0001');
  const tok = await mintToken(app, org, cred);
  const r = await tokens(app).resolve(tok.token);
  t.truthy(r);
  t.is(r!.token.id, tok.id);
  t.is(r!.token.orgId, org.id);
  t.deepEqual(r!.credential, { id: cred, orgId: org.id, provider: 'anthropic', fields: {} });
  t.false(JSON.stringify(r).includes(tok.token), 'the resolved record holds the hash, not the token');
  // Cached: the second lookup gives the same answer.
  t.is((await tokens(app).resolve(tok.token))?.token.id, tok.id);
});

test('resolve carries the credential\'s plain fields (openai organization and project), so the proxy needs no other read', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const created = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-test-resolve-fields-01', organization: 'org-resolve1', project: 'proj_resolve1' } });
  t.is(created.status, 201);
  const tok = await mintToken(app, org, created.body.id);
  const r = await tokens(app).resolve(tok.token);
  t.deepEqual(r!.credential, { id: created.body.id, orgId: org.id, provider: 'openai', fields: { organization: 'org-resolve1', project: 'proj_resolve1' } });
});

test('resolve refuses malformed, unknown and non-proxy tokens without error', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-test-resolve-0000002');
  const tok = await mintToken(app, org, cred);
  const flipped = tok.token.slice(0, 8) + (tok.token[8] === 'a' ? 'b' : 'a') + tok.token.slice(9);
  for (const presented of ['', 'ptok_', 'ptok_abc', flipped, tok.token + 'x', ` ${tok.token}`, tok.token.toUpperCase(), newToken('ptok'), org.token, tok.id, cred]) {
    t.is(await tokens(app).resolve(presented), undefined, presented);
  }
});

test('an expired token is refused: valid while now < expires_at', async (t) => {
  const clock = new ManualClock();
  const app = await startApp(t, { clock });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-test-resolve-0000003');
  const tok = await mintToken(app, org, cred, '60s');
  const long = await mintToken(app, org, cred, '2m');
  t.truthy(await tokens(app).resolve(tok.token));
  clock.advance(59_999);
  t.truthy(await tokens(app).resolve(tok.token), 'one millisecond before expiry');
  clock.advance(1);
  t.is(await tokens(app).resolve(tok.token), undefined, 'at expires_at');
  clock.advance(3_600_000);
  t.is(await tokens(app).resolve(tok.token), undefined);
  t.is(await tokens(app).resolve(long.token), undefined);
  // A fresh service (no cache) agrees: expiry is not a cache artefact.
  await app.stop();
  const again = await startApp(t, { dataDir: app.dataDir, clock });
  t.is(await tokens(again).resolve(tok.token), undefined);
  clock.set(clock.now() - 3_600_000 - 60_000 + 1000);
  t.truthy(await tokens(again).resolve(long.token), 'a clock back inside the window finds it live');
});

test('a revoked token is refused at once, even when it was cached', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-test-resolve-0000004');
  const tok = await mintToken(app, org, cred);
  const other = await mintToken(app, org, cred);
  t.truthy(await tokens(app).resolve(tok.token));
  t.truthy(await tokens(app).resolve(other.token));
  t.is((await api(app, 'DELETE', `/v1/tokens/${tok.id}`, { token: org.token })).status, 200);
  t.is(await tokens(app).resolve(tok.token), undefined);
  t.truthy(await tokens(app).resolve(other.token), 'revoking one token leaves the others');
});

test("a deleted credential's tokens are refused at once, and its key is no longer served", async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-test-resolve-0000005');
  const keep = await createCredential(app, org, 'openai', 'sk-test-resolve-0000006');
  const tok = await mintToken(app, org, cred);
  const kept = await mintToken(app, org, keep);
  const credentials = app.server.container.resolve(CredentialService);
  t.truthy(await tokens(app).resolve(tok.token));
  t.is(await credentials.keyFor({ orgId: org.id, id: cred, provider: 'openai' }), 'sk-test-resolve-0000005');
  t.is((await api(app, 'DELETE', `/v1/credentials/${cred}`, { token: org.token })).status, 200);
  t.is(await tokens(app).resolve(tok.token), undefined);
  await t.throwsAsync(credentials.keyFor({ orgId: org.id, id: cred, provider: 'openai' }));
  t.truthy(await tokens(app).resolve(kept.token));
});

test('a rotated credential: its tokens keep resolving and the new key is served at once', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-test-resolve-old-0007');
  const tok = await mintToken(app, org, cred);
  const credentials = app.server.container.resolve(CredentialService);
  const r = await tokens(app).resolve(tok.token);
  t.is(await credentials.keyFor(r!.credential), 'sk-test-resolve-old-0007');
  t.is((await api(app, 'POST', `/v1/credentials/${cred}/rotate`, { token: org.token, body: { api_key: 'sk-test-resolve-new-0007' } })).status, 200);
  const after = await tokens(app).resolve(tok.token);
  t.is(after?.credential.id, cred);
  t.is(await credentials.keyFor(after!.credential), 'sk-test-resolve-new-0007');
});

test('another instance on the same store sees revocation, deletion and rotation within a second', async (t) => {
  // Both instances' feed polls and cache ages run on these timers: the second is one the test moves.
  const timers = new ManualClock();
  const a = await startApp(t, { timers });
  const b = await startApp(t, { timers, dataDir: a.dataDir });
  const org = await createOrg(a);
  const c1 = await createCredential(a, org, 'openai', 'sk-test-feed-000000001');
  const c2 = await createCredential(a, org, 'openai', 'sk-test-feed-000000002');
  const revoked = await mintToken(a, org, c1);
  const orphaned = await mintToken(a, org, c2);
  const bCreds = b.server.container.resolve(CredentialService);
  // Instance B caches all of it.
  t.truthy(await tokens(b).resolve(revoked.token));
  t.truthy(await tokens(b).resolve(orphaned.token));
  t.is(await bCreds.keyFor({ orgId: org.id, id: c1, provider: 'openai' }), 'sk-test-feed-000000001');

  t.is((await api(a, 'DELETE', `/v1/tokens/${revoked.id}`, { token: org.token })).status, 200);
  t.is((await api(a, 'DELETE', `/v1/credentials/${c2}`, { token: org.token })).status, 200);
  t.is((await api(a, 'POST', `/v1/credentials/${c1}/rotate`, { token: org.token, body: { api_key: 'sk-test-feed-rotated-01' } })).status, 200);

  t.truthy(await tokens(b).resolve(revoked.token), 'still cached on B until its feed polls');
  await timers.tick(1000);
  t.is(await tokens(b).resolve(revoked.token), undefined, 'revocation reached the other instance within 1 s');
  t.is(await tokens(b).resolve(orphaned.token), undefined, 'credential deletion reached the other instance within 1 s');
  t.is(await bCreds.keyFor({ orgId: org.id, id: c1, provider: 'openai' }), 'sk-test-feed-rotated-01', 'rotation reached the other instance within 1 s');
});
