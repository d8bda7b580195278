/**
 * The token and key caches under change events, through whole gateways on
 * one SQLite data dir: an event reads no other cached token and disturbs no
 * unrelated load; a credential deleted with many tokens reaches another
 * instance as one change that refuses them all; and while an instance's
 * change feed is down, a revocation made elsewhere still lands there within
 * about a second (while the feed is live, hits read nothing from the store).
 * The gateways' feed polls and cache ages run on one ManualClock's timers:
 * "within a second" is a second the test moves, however busy the machine.
 */
import 'reflect-metadata';
import test from 'ava';
import type { Change, TokenRecord } from '../../src/store/ports.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Symbols } from '../../src/symbols.js';
import { CredentialService } from '../../src/vault/credential-service.js';
import { sha256Hex } from '../../src/ids.js';
import { TokenService } from '../../src/vault/token-service.js';
import { api, createCredential, createOrg, mintToken, startApp, type TestApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { eventually } from '../support/wait.js';

const tokens = (app: TestApp) => app.server.container.resolve(TokenService);
const storeOf = (app: TestApp) => app.server.container.resolve<SqliteStore>(Symbols.Store);

/** Counts the app's token reads from the store, per token hash, and optionally holds some back. */
function spyTokenReads(app: TestApp, wrap: (r: TokenRecord) => TokenRecord = (r) => r) {
  const store = storeOf(app);
  const original = store.findTokenByHash.bind(store);
  const reads = new Map<string, number>();
  const gates = new Map<string, Promise<void>>();
  store.findTokenByHash = async (hash: string) => {
    reads.set(hash, (reads.get(hash) ?? 0) + 1);
    await gates.get(hash);
    const r = await original(hash);
    return r && wrap(r);
  };
  return { reads, gates, total: () => [...reads.values()].reduce((a, b) => a + b, 0) };
}

/** Mints `n` tokens through the service (the admin API would take longer and prove nothing more here). */
async function mintMany(app: TestApp, orgId: string, credentialId: string, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await tokens(app).mint(orgId, credentialId, 3_600_000, {})).token);
  return out;
}

test('revoking a token and deleting a credential read no other cached token', async (t) => {
  const timers = new ManualClock();
  const app = await startApp(t, { timers });
  const org = await createOrg(app);
  const doomed = await createCredential(app, org, 'openai', 'sk-test-invalidate-00001');
  const kept = await createCredential(app, org, 'openai', 'sk-test-invalidate-00002');
  const many = await mintMany(app, org.id, doomed, 200);
  const others = await mintMany(app, org.id, kept, 200);
  // Every record the cache holds counts each property read.
  let reads = 0;
  spyTokenReads(app, (r) => new Proxy(r, { get: (target, prop, receiver) => (reads++, Reflect.get(target, prop, receiver)) }));
  for (const tok of [...many, ...others]) t.truthy(await tokens(app).resolve(tok));
  reads = 0;

  const revoke = await api(app, 'GET', `/v1/tokens?limit=1`, { token: org.token });
  t.is((await api(app, 'DELETE', `/v1/tokens/${revoke.body.data[0].id}`, { token: org.token })).status, 200);
  t.is((await api(app, 'DELETE', `/v1/credentials/${doomed}`, { token: org.token })).status, 200);
  await timers.tick(600); // the instance's own feed delivers both changes back to it meanwhile
  t.is(reads, 0, 'no cached token record was looked at');

  for (const tok of many) t.is(await tokens(app).resolve(tok), undefined);
  const stillCached = (await Promise.all(others.map((tok) => tokens(app).resolve(tok)))).filter(Boolean).length;
  t.true(stillCached >= others.length - 1, 'the other credential keeps its tokens');
});

test("deleting a credential leaves an unrelated token's load in flight to be cached", async (t) => {
  const timers = new ManualClock();
  const app = await startApp(t, { timers });
  const org = await createOrg(app);
  const doomed = await createCredential(app, org, 'openai', 'sk-test-invalidate-00003');
  const kept = await createCredential(app, org, 'openai', 'sk-test-invalidate-00004');
  await mintToken(app, org, doomed);
  const tok = await mintToken(app, org, kept);
  const spy = spyTokenReads(app);
  let release!: () => void;
  spy.gates.set(sha256Hex(tok.token), new Promise<void>((r) => (release = r)));

  const first = tokens(app).resolve(tok.token);
  await eventually(() => spy.reads.size > 0, 'the load began');
  t.is((await api(app, 'DELETE', `/v1/credentials/${doomed}`, { token: org.token })).status, 200);
  await timers.tick(400); // and its change comes back through the feed
  release();
  t.is((await first)?.token.id, tok.id);
  spy.gates.clear();
  t.is((await tokens(app).resolve(tok.token))?.token.id, tok.id);
  t.is(spy.reads.get(sha256Hex(tok.token)), 1, 'the load begun before an unrelated deletion was cached');
});

test('a credential deleted with 300 tokens on instance A: B hears one change and refuses them all', async (t) => {
  const timers = new ManualClock();
  const a = await startApp(t, { timers });
  const b = await startApp(t, { timers, dataDir: a.dataDir });
  const org = await createOrg(a);
  const doomed = await createCredential(a, org, 'openai', 'sk-test-invalidate-00005');
  const kept = await createCredential(a, org, 'openai', 'sk-test-invalidate-00006');
  const many = await mintMany(a, org.id, doomed, 300);
  const keep = (await mintMany(a, org.id, kept, 1))[0]!;
  for (const tok of [...many, keep]) t.truthy(await tokens(b).resolve(tok));
  const heard: Change[] = [];
  const stop = storeOf(b).watch((c) => heard.push(c));
  t.teardown(stop);
  const spy = spyTokenReads(b);

  t.is((await api(a, 'DELETE', `/v1/credentials/${doomed}`, { token: org.token })).status, 200);
  await timers.tick(1000);
  const refused = (await Promise.all(many.map((tok) => tokens(b).resolve(tok)))).every((r) => r === undefined);
  t.true(refused, 'every token of the deleted credential is refused on B within a second');
  await timers.tick(400);
  t.deepEqual(heard, [{ kind: 'credential', id: doomed }], 'one change for the credential and all its tokens');
  t.truthy(await tokens(b).resolve(keep));
  t.is(spy.reads.get(sha256Hex(keep)), undefined, "the other credential's token is still served from B's cache");
});

test("while B's change feed is down, a revocation or rotation made on A lands on B within about a second", async (t) => {
  const timers = new ManualClock();
  const a = await startApp(t, { timers });
  const b = await startApp(t, { timers, dataDir: a.dataDir });
  const org = await createOrg(a);
  const cred = await createCredential(a, org, 'openai', 'sk-test-invalidate-00007');
  const [early, late, kept] = [await mintToken(a, org, cred), await mintToken(a, org, cred), await mintToken(a, org, cred)];
  const bCreds = b.server.container.resolve(CredentialService);
  const ref = { orgId: org.id, id: cred, provider: 'openai' };
  for (const tok of [early, late, kept]) t.truthy(await tokens(b).resolve(tok.token));
  t.is(await bCreds.keyFor(ref), 'sk-test-invalidate-00007');
  const spy = spyTokenReads(b);

  // Feed live: entries older than a second are still hits, read from nothing.
  await timers.tick(200);
  t.true(storeOf(b).isLive());
  await timers.tick(1200);
  for (const tok of [early, late, kept]) t.truthy(await tokens(b).resolve(tok.token));
  t.is(spy.total(), 0, 'live feed: no store read for a cached token');

  const heard: Change[] = [];
  t.teardown(storeOf(b).watch((c) => heard.push(c)));
  storeOf(b).pollFault = new Error('feed down');
  await timers.tick(600);
  t.false(storeOf(b).isLive(), "B's feed is not live");

  // An entry older than a second is reloaded at once: the revocation lands on B's next lookup.
  t.is((await api(a, 'DELETE', `/v1/tokens/${early.id}`, { token: org.token })).status, 200);
  t.is(await tokens(b).resolve(early.token), undefined);
  // One loaded during the outage is trusted under a second, then reloaded.
  t.truthy(await tokens(b).resolve(late.token));
  t.is((await api(a, 'DELETE', `/v1/tokens/${late.id}`, { token: org.token })).status, 200);
  await timers.tick(1000);
  t.is(await tokens(b).resolve(late.token), undefined, 'refused on B within a second of the revocation');
  // Keys too: a rotation on A is served by B within about a second.
  t.is((await api(a, 'POST', `/v1/credentials/${cred}/rotate`, { token: org.token, body: { api_key: 'sk-test-invalidate-rotated' } })).status, 200);
  await timers.tick(1000);
  t.is(await bCreds.keyFor(ref), 'sk-test-invalidate-rotated');
  t.deepEqual(heard, [], 'none of it came through the feed');
  t.truthy(await tokens(b).resolve(kept.token), 'a live token is still served (from the store) through the outage');

  // The feed back: what it missed arrives, and hits stop reading the store again.
  storeOf(b).pollFault = undefined;
  await timers.tick(200);
  t.true(storeOf(b).isLive() && heard.length >= 3);
  t.truthy(await tokens(b).resolve(kept.token));
  const before = spy.total();
  await timers.tick(1200);
  t.truthy(await tokens(b).resolve(kept.token));
  t.is(spy.total(), before, 'live again: a cached token older than a second is a hit');
});
