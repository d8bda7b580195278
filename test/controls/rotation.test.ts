import test from 'ava';
import { randomBytes } from 'node:crypto';
import { openVault } from '../../src/boot/vault.js';
import { loadConfig } from '../../src/settings/config.js';
import { createLogger } from '../../src/log.js';
import { RewrapService } from '../../src/vault/rewrap-service.js';
import { CredentialService } from '../../src/vault/credential-service.js';
import { api, createOrg, startApp, tempDir } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { eventually } from '../support/wait.js';

/** Keeps `concurrency` proxy requests in flight until stopped; returns every status seen. */
function steadyTraffic(url: string, token: string, concurrency = 4) {
  let running = true;
  const statuses: number[] = [];
  const workers = Array.from({ length: concurrency }, async () => {
    while (running) {
      const r = await fetch(url, { headers: { 'x-proxy-token': token } });
      await r.arrayBuffer();
      statuses.push(r.status);
    }
  });
  return { stop: async () => { running = false; await Promise.all(workers); return statuses; } };
}

test('rotating a credential key in place: same id, tokens keep working, no request fails, new key used at once', async (t) => {
  const f = await proxyFixture(t);
  const traffic = steadyTraffic(f.proxyUrl('v1/models'), f.tokens.openai.token);
  await eventually(() => f.fake.received.length >= 4, 'traffic flowing');
  const newKey = `sk-rotated-${randomBytes(8).toString('hex')}`;
  const rotated = await api(f.app, 'POST', `/v1/credentials/${f.credentials.openai}/rotate`, { token: f.org.token, body: { api_key: newKey } });
  t.is(rotated.status, 200);
  t.is(rotated.body.id, f.credentials.openai);
  t.is(rotated.body.key_hint, `…${newKey.slice(-4)}`);
  const at = f.fake.received.length;
  // Let traffic run until a dozen requests have gone upstream after the rotation (a loaded machine is slower).
  await eventually(() => f.fake.received.length >= at + 12, 'a dozen requests after the rotation').catch(() => undefined);
  const statuses = await traffic.stop();
  t.true(statuses.length > 10);
  t.deepEqual([...new Set(statuses)], [200], 'no request failed during the rotation');
  const after = f.fake.received.slice(at + 4); // requests begun after the rotation returned
  t.true(after.length > 0);
  for (const r of after) t.is(r.headers.authorization, `Bearer ${newKey}`);
  t.false(rotated.text.includes(newKey));
});

test('rotating the org token with a grace period: the old token works until it ends, the new one at once', async (t) => {
  const clock = new ManualClock(Date.now());
  const f = await proxyFixture(t, { clock });
  const rotated = await api(f.app, 'POST', '/v1/orgs/self/token/rotate', { token: f.org.token, body: { grace_s: 2 } });
  t.is(rotated.status, 200);
  t.regex(rotated.body.token, /^otok_/);
  t.regex(rotated.body.token_id, /^otk_/);
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: rotated.body.token })).status, 200);
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).status, 200, 'old token within grace');
  clock.advance(2000);
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).status, 401, 'old token after grace');
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: rotated.body.token })).status, 200);
  // Proxy tokens minted under the old org token are untouched.
  t.is((await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } })).status, 200);
});

test('keys rewrap moves every DEK to the new local key while traffic flows, and nothing fails', async (t) => {
  const dataDir = tempDir(t);
  const oldKek = randomBytes(32).toString('base64');
  const newKek = randomBytes(32).toString('base64');
  const first = await proxyFixture(t, { dataDir, env: { KEYWARD_LOCAL_KEK: oldKek } });
  await first.app.stop();
  // Restart on the new key, with the old one as previous: everything still decrypts.
  const f = await proxyFixture(t, { dataDir, env: { KEYWARD_LOCAL_KEK: newKek, KEYWARD_LOCAL_KEK_PREVIOUS: oldKek } });
  const traffic = steadyTraffic(f.proxyUrl('v1/models'), f.tokens.openai.token);
  const log = createLogger('error');
  const vault = await openVault(loadConfig({ KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: newKek, KEYWARD_LOCAL_KEK_PREVIOUS: oldKek }), log);
  t.teardown(() => vault.close());
  const report = await new RewrapService(vault.store, vault.envelope, vault.keyWrapper).run();
  const statuses = await traffic.stop();
  t.deepEqual([...new Set(statuses)], [200]);
  t.is(report.failed.length, 0);
  t.is(report.rewrapped, 3, 'the first fixture\'s three credentials were under the old key');
  t.is(report.alreadyCurrent, 3, 'the second fixture\'s were made under the new one');
  const current = await vault.keyWrapper.currentKekId();
  for await (const c of vault.store.allCredentials()) t.is(c.kekId, current);
  await f.app.stop();
  // Without the previous key, everything still opens.
  const g = await proxyFixture(t, { dataDir, env: { KEYWARD_LOCAL_KEK: newKek } });
  const credentials = g.app.server.container.resolve(CredentialService);
  for (const [org, fixture] of [[first.org.id, first], [f.org.id, f]] as const) {
    for (const provider of ['openai', 'anthropic', 'gemini'] as const) {
      t.is(await credentials.keyFor({ orgId: org, id: fixture.credentials[provider], provider }), fixture.keys[provider]);
    }
  }
  const res0 = await fetch(g.proxyUrl('v1/models'), { headers: { 'x-proxy-token': first.tokens.openai.token } });
  t.is(res0.status, 200);
  const res = await fetch(g.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } });
  t.is(res.status, 200, 'a token from before the rewrap still proxies');
  t.is(g.fake.received.at(-1)!.headers.authorization, `Bearer ${f.keys.openai}`);
});

test.serial('the reported attack: a leaked org token the owner is retiring cannot rotate (403 token_retiring); the owner\'s new token keeps working', async (t) => {
  const app = await startApp(t);
  const owner = await createOrg(app);
  const leaked = owner.token;
  const rotated = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: owner.token, body: { grace_s: 3600 } });
  t.is(rotated.status, 200);
  // The attacker, holding the old token, tries to end the owner's new one at once and take a permanent one.
  const attack = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: leaked, body: { grace_s: 0 } });
  t.is(attack.status, 403);
  t.is(attack.body.error.code, 'token_retiring');
  t.is(attack.body.error.type, 'permission');
  t.is(attack.body.token, undefined);
  t.is((await api(app, 'GET', '/v1/credentials', { token: rotated.body.token })).status, 200, 'the owner\'s new token still works');
  t.is((await api(app, 'GET', '/v1/credentials', { token: leaked })).status, 200, 'the old one only within its grace');
  const audit = await api(app, 'GET', '/v1/audit', { token: rotated.body.token });
  t.true(audit.body.data.some((e: any) => e.action === 'org.token_rotate' && e.outcome === 'failure'));
});

test.serial('rotating again never extends the life of a token that is already retiring', async (t) => {
  const clock = new ManualClock(Date.now());
  const app = await startApp(t, { clock });
  const first = await createOrg(app);
  const second = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: first.token, body: { grace_s: 60 } });
  t.is(second.status, 200);
  const third = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: second.body.token, body: { grace_s: 3600 } });
  t.is(third.status, 200);
  clock.advance(61_000);
  t.is((await api(app, 'GET', '/v1/credentials', { token: first.token })).status, 401, 'the first token ended on its own schedule');
  t.is((await api(app, 'GET', '/v1/credentials', { token: second.body.token })).status, 200);
  t.is((await api(app, 'GET', '/v1/credentials', { token: third.body.token })).status, 200);
});
