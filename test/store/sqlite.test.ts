import test from 'ava';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { BAD_CURSOR, type AuditRecord, type Store } from '../../src/store/ports.js';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import { tempDir } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { storeContract } from './contract.js';

// No breakFor: an embedded file has no outage to simulate (a closed store throws ERR_INVALID_STATE, which is not one).

storeContract(test, {
  name: 'sqlite',
  async backend(t) {
    const dir = tempDir(t, 'keyward-store-');
    // The change feed polls on these: the contract's feed tests move them instead of waiting.
    const timers = new ManualClock();
    return {
      timers,
      async open(): Promise<Store> {
        const store = new SqliteStore(dir, undefined, timers);
        t.teardown(() => store.close());
        return store;
      },
    };
  },
});

test('sqlite: a database made before credentials had plain fields gains the column on open; its credentials read back with none', async (t) => {
  const { DatabaseSync } = await import('node:sqlite');
  const { randomBytes } = await import('node:crypto');
  const dir = tempDir(t, 'keyward-store-');
  const now = Date.now();
  const first = new SqliteStore(dir);
  await first.createOrg({ id: 'org_old', name: 'old', createdAt: now }, { id: 'otk_old', orgId: 'org_old', tokenHash: 'h'.repeat(64), createdAt: now, expiresAt: null });
  const old = { id: 'cred_old', orgId: 'org_old', provider: 'openai', keyHint: '…wxyz', wrappedDek: randomBytes(60), kekId: 'k', nonce: randomBytes(12), ciphertext: randomBytes(41), createdAt: now, updatedAt: now };
  t.is(await first.createCredential(old, 10), 'created');
  await first.close();
  // Back to the schema as it was: no `fields` column.
  const raw = new DatabaseSync(`${dir}/keyward.db`);
  raw.exec('ALTER TABLE credentials DROP COLUMN fields');
  t.false((raw.prepare('PRAGMA table_info(credentials)').all() as Array<{ name: string }>).some((c) => c.name === 'fields'));
  raw.close();

  // The first store to open the old file adds the column; a second one beside it finds it there.
  const [a, b] = [new SqliteStore(dir), new SqliteStore(dir)];
  t.teardown(() => a.close());
  t.teardown(() => b.close());
  t.deepEqual((await a.getCredential('org_old', 'cred_old'))?.fields, {});
  const next = { ...old, id: 'cred_new', fields: { organization: 'org-new' } };
  t.is(await b.createCredential(next, 10), 'created');
  t.deepEqual((await a.getCredential('org_old', 'cred_new'))?.fields, { organization: 'org-new' });
});

test('sqlite: an audit table made before count and expire_at gets them (old records: count 1, kept the default 400 days)', async (t) => {
  const dir = tempDir(t, 'keyward-store-');
  const old = new DatabaseSync(path.join(dir, 'keyward.db'));
  old.exec(`CREATE TABLE audit (
    id TEXT PRIMARY KEY, time INTEGER NOT NULL, request_id TEXT NOT NULL, org TEXT NOT NULL, actor TEXT NOT NULL,
    action TEXT NOT NULL, target TEXT NOT NULL, outcome TEXT NOT NULL, ip TEXT NOT NULL
  ) STRICT`);
  const time = Date.now() - 1000;
  old.prepare('INSERT INTO audit VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)').run('evt_old', time, 'req_old', 'org_A', 'cli', 'org.create', 'org_A', 'success', '');
  old.close();
  // Two processes opening the old file at once: one migrates, neither fails.
  const [a, b] = [new SqliteStore(dir), new SqliteStore(dir)];
  t.teardown(() => Promise.all([a.close(), b.close()]));
  t.deepEqual(await b.listAudit('org_A', { limit: 10 }), {
    data: [{ id: 'evt_old', time, requestId: 'req_old', org: 'org_A', actor: 'cli', action: 'org.create', target: 'org_A', outcome: 'success', ip: '', count: 1, expireAt: time + 400 * 86_400_000 }],
    hasMore: false,
  });
});

test('sqlite: a usage table made before spend was counted gains spend_micros (old counters spent 0); shards written since add to it', async (t) => {
  const dir = tempDir(t, 'keyward-store-');
  const old = new DatabaseSync(path.join(dir, 'keyward.db'));
  old.exec(`CREATE TABLE usage (
    scope TEXT NOT NULL, id TEXT NOT NULL, period TEXT NOT NULL,
    requests INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    PRIMARY KEY (scope, id, period)
  ) STRICT`);
  old.prepare('INSERT INTO usage VALUES (?, ?, ?, ?, ?, ?)').run('org', 'org_A', '2026-11', 3, 30, 9);
  old.close();
  const [a, b] = [new SqliteStore(dir), new SqliteStore(dir)];
  t.teardown(() => Promise.all([a.close(), b.close()]));
  t.deepEqual(await a.getUsage('org', 'org_A', '2026-11'), { requests: 3, inputTokens: 30, outputTokens: 9, spendMicros: 0 });
  await b.putUsageShards('w1', 1, [{ scope: 'org', id: 'org_A', period: '2026-11', requests: 1, inputTokens: 1, outputTokens: 1, spendMicros: 2_500 }]);
  t.deepEqual(await a.getUsage('org', 'org_A'), { requests: 4, inputTokens: 31, outputTokens: 10, spendMicros: 2_500 });
});

test('sqlite: deleteExpiredAudit deletes at most `limit` expired records per call, never a live one', async (t) => {
  const store = new SqliteStore(tempDir(t, 'keyward-store-'));
  t.teardown(() => store.close());
  const now = 1_800_000_000_000;
  const rec = (i: number, expireAt: number): AuditRecord => ({
    id: newId('evt'), time: now - 10_000 + i, requestId: 'req', org: 'org_A', actor: 'cli', action: 'token.create', target: 'tok', outcome: 'success', ip: '', count: 1, expireAt,
  });
  await store.appendAudit([...Array.from({ length: 5 }, (_, i) => rec(i, now - 1)), rec(5, now), rec(6, now + 1)]);
  t.is(await store.deleteExpiredAudit(now, 2), 2);
  t.is(await store.deleteExpiredAudit(now, 10), 4, 'expire_at == now counts as expired');
  t.is(await store.deleteExpiredAudit(now, 10), 0);
  const left = await store.listAudit('org_A', { limit: 10 }, 0);
  t.deepEqual(left !== BAD_CURSOR && left.data.map((r) => r.expireAt), [now + 1]);
});

// Serial: the contract tests above block this process's event loop (in-process lock waits), which would stall the poller.
test.serial('sqlite: the feed is not live while its polls fail, and live again (with what it missed) once they succeed', async (t) => {
  const dir = tempDir(t, 'keyward-store-');
  // The feed polls on these timers: the test moves them (200 ms polls; live while the last good poll is at most 500 ms old).
  const timers = new ManualClock();
  const [writer, reader] = [new SqliteStore(dir, undefined, timers), new SqliteStore(dir, undefined, timers)];
  t.teardown(() => Promise.all([writer.close(), reader.close()]));
  const heard: string[] = [];
  reader.watch((c) => heard.push(c.id));
  t.false(reader.isLive(), 'not polled yet');
  await timers.tick(200);
  t.true(reader.isLive());
  reader.pollFault = new Error('disk unreadable');
  await timers.tick(500);
  t.true(reader.isLive(), 'the last good poll is 500 ms old');
  await timers.tick(1);
  t.false(reader.isLive(), 'not live within about two poll intervals of failing');
  const orgId = newId('org');
  const firstToken = newId('otk');
  await writer.createOrg({ id: orgId, name: 'acme', createdAt: Date.now() }, { id: firstToken, orgId, tokenHash: sha256Hex(newToken('otok')), createdAt: Date.now(), expiresAt: null });
  await writer.rotateOrgToken({ id: newId('otk'), orgId, tokenHash: sha256Hex(newToken('otok')), createdAt: Date.now(), expiresAt: null }, Date.now(), firstToken);
  await timers.tick(400);
  t.deepEqual(heard, [], 'nothing delivered while down');
  reader.pollFault = undefined;
  await timers.tick(200);
  t.true(reader.isLive());
  t.deepEqual(heard, [orgId]);
});

test.serial('sqlite: a listener that throws does not make the next one miss a change', async (t) => {
  const dir = tempDir(t, 'keyward-store-');
  const timers = new ManualClock();
  const [writer, reader] = [new SqliteStore(dir, undefined, timers), new SqliteStore(dir, undefined, timers)];
  t.teardown(() => Promise.all([writer.close(), reader.close()]));
  const heard: string[] = [];
  reader.watch(() => {
    throw new Error('a buggy listener');
  });
  reader.watch((c) => heard.push(c.id));
  const orgId = newId('org');
  const firstToken = newId('otk');
  await writer.createOrg({ id: orgId, name: 'acme', createdAt: Date.now() }, { id: firstToken, orgId, tokenHash: sha256Hex(newToken('otok')), createdAt: Date.now(), expiresAt: null });
  await writer.rotateOrgToken({ id: newId('otk'), orgId, tokenHash: sha256Hex(newToken('otok')), createdAt: Date.now(), expiresAt: null }, Date.now(), firstToken);
  await timers.tick(200); // one poll
  t.deepEqual(heard, [orgId]);
});

test('sqlite: a tokens table made before admin keys gains created_by on open; its tokens read back with none and are listed to no minter', async (t) => {
  const { randomBytes } = await import('node:crypto');
  const dir = tempDir(t, 'keyward-store-');
  const now = Date.now();
  const first = new SqliteStore(dir);
  await first.createOrg({ id: 'org_old', name: 'old', createdAt: now }, { id: 'otk_old', orgId: 'org_old', tokenHash: 'h'.repeat(64), createdAt: now, expiresAt: null });
  const cred = { id: 'cred_old', orgId: 'org_old', provider: 'openai', keyHint: '…wxyz', wrappedDek: randomBytes(60), kekId: 'k', nonce: randomBytes(12), ciphertext: randomBytes(41), createdAt: now, updatedAt: now };
  await first.createCredential(cred, 10);
  const tok = { id: 'tok_old', orgId: 'org_old', credentialId: 'cred_old', tokenHash: sha256Hex(newToken('ptok')), scopes: {}, createdAt: now, expiresAt: now + 60_000 };
  t.is(await first.createToken(tok), 'created');
  await first.close();
  // Back to the schema as it was: no `created_by` column, no admin_keys table.
  const raw = new DatabaseSync(path.join(dir, 'keyward.db'));
  raw.exec('DROP INDEX tokens_org_creator; ALTER TABLE tokens DROP COLUMN created_by; DROP TABLE admin_keys');
  raw.close();

  const [a, b] = [new SqliteStore(dir), new SqliteStore(dir)];
  t.teardown(() => Promise.all([a.close(), b.close()]));
  t.deepEqual(await a.getToken('org_old', 'tok_old'), tok);
  t.deepEqual(await b.listTokens('org_old', { limit: 10 }, newId('akey')), { data: [], hasMore: false });
  const mine = { ...tok, id: 'tok_new', tokenHash: sha256Hex(newToken('ptok')), createdBy: 'akey_x' };
  t.is(await b.createToken(mine), 'created');
  t.deepEqual(await a.listTokens('org_old', { limit: 10 }, 'akey_x'), { data: [mine], hasMore: false });
  t.deepEqual(await a.listAdminKeys('org_old', { limit: 10 }), { data: [], hasMore: false });
});

test('sqlite: a database made before names gains name columns on open; its admin keys are found by their names, the rest read back unnamed', async (t) => {
  const { randomBytes } = await import('node:crypto');
  const dir = tempDir(t, 'keyward-store-');
  const now = Date.now();
  const first = new SqliteStore(dir);
  await first.createOrg({ id: 'org_old', name: 'old', createdAt: now }, { id: 'otk_old', orgId: 'org_old', tokenHash: 'h'.repeat(64), createdAt: now, expiresAt: null });
  const cred = { id: 'cred_old', orgId: 'org_old', provider: 'openai', keyHint: '…wxyz', wrappedDek: randomBytes(60), kekId: 'k', nonce: randomBytes(12), ciphertext: randomBytes(41), fields: {}, createdAt: now, updatedAt: now };
  await first.createCredential(cred, 10);
  const tok = { id: 'tok_old', orgId: 'org_old', credentialId: 'cred_old', tokenHash: sha256Hex(newToken('ptok')), scopes: {}, createdAt: now, expiresAt: now + 60_000 };
  t.is(await first.createToken(tok), 'created');
  const key = { id: 'akey_old', orgId: 'org_old', name: 'Déploy bot', role: 'viewer' as const, tokenHash: sha256Hex(newToken('otok')), createdAt: now, expiresAt: null, createdBy: 'cli' };
  await first.createAdminKey(key);
  await first.close();
  // Back to the schema as it was: no name columns, no revoked_tokens table, audit without target_name.
  const raw = new DatabaseSync(path.join(dir, 'keyward.db'));
  raw.exec(`ALTER TABLE credentials DROP COLUMN name; ALTER TABLE credentials DROP COLUMN name_key; ALTER TABLE tokens DROP COLUMN name;
    ALTER TABLE tokens DROP COLUMN name_key; ALTER TABLE admin_keys DROP COLUMN name_key; ALTER TABLE audit DROP COLUMN target_name; DROP TABLE revoked_tokens`);
  raw.close();

  const [a, b] = [new SqliteStore(dir), new SqliteStore(dir)];
  t.teardown(() => Promise.all([a.close(), b.close()]));
  t.deepEqual(await a.getCredential('org_old', 'cred_old'), cred);
  t.deepEqual(await b.getToken('org_old', 'tok_old'), tok);
  t.deepEqual(await a.listAdminKeys('org_old', { limit: 10, namePrefix: 'déPLOY' }), { data: [key], hasMore: false });
  t.true(await b.setCredentialName('org_old', 'cred_old', 'legacy'));
  t.deepEqual(await a.listCredentials('org_old', { limit: 10, namePrefix: 'LEG' }), { data: [{ ...cred, name: 'legacy' }], hasMore: false });
  t.truthy(await a.revokeToken('org_old', 'tok_old', now + 1, 'cli'));
  const revoked = await b.listRevokedTokens('org_old', { limit: 10 });
  t.deepEqual(revoked !== BAD_CURSOR && revoked.data.map((r) => r.id), ['tok_old']);
});

test('sqlite: MCP tables made before the clean-up gain its columns on open, filled from each record; the sweep then deletes what ended', async (t) => {
  const dir = tempDir(t, 'keyward-store-');
  const raw = new DatabaseSync(path.join(dir, 'keyward.db'));
  // The tables as they were made before the clean-up's columns.
  raw.exec(`CREATE TABLE mcp_clients (id TEXT PRIMARY KEY, data TEXT NOT NULL) STRICT;
    CREATE TABLE mcp_grants (id TEXT PRIMARY KEY, principal TEXT NOT NULL, version INTEGER NOT NULL, data TEXT NOT NULL) STRICT;`);
  const client = { id: newId('mcpc'), name: 'old client', redirectUris: ['http://127.0.0.1:5/cb'], createdAt: 10 };
  const base = {
    orgId: newId('org'), credentialId: newId('cred'), resource: 'https://keyward.test/v1/mcp/cred_x', clientId: client.id, principal: newId('otk'), tools: [],
    codeHash: 'a'.repeat(64), redirectUri: 'http://127.0.0.1:5/cb', codeChallenge: 'c'.repeat(43), codeExpiresAt: 20, refreshHash: null, usedRefreshHashes: [], issued: [], createdAt: 1, version: 1,
  };
  const ended = { ...base, id: newId('mcpg'), state: 'code', expiresAt: 1000 };
  const live = { ...base, id: newId('mcpg'), state: 'active', expiresAt: 1000 };
  raw.prepare('INSERT INTO mcp_clients (id, data) VALUES (?, ?)').run(client.id, JSON.stringify(client));
  for (const g of [ended, live]) raw.prepare('INSERT INTO mcp_grants (id, principal, version, data) VALUES (?, ?, 1, ?)').run(g.id, g.principal, JSON.stringify(g));
  raw.close();

  // Two stores opening the old file at once: one migrates, neither fails.
  const [a, b] = [new SqliteStore(dir), new SqliteStore(dir)];
  t.teardown(() => a.close());
  t.teardown(() => b.close());
  t.is(await a.purgeMcpGrants(500, 10), 1, 'the unredeemed code ended at 20; the active grant lives to 1000');
  t.is(await b.getMcpGrant(ended.id), undefined);
  t.is(await b.purgeMcpClients(500, 10), 0, 'the client is named by the live grant');
  t.is(await a.purgeMcpGrants(1000, 10), 1);
  t.is(await b.purgeMcpClients(500, 10), 1, 'registered at 10, never used, now named by none');
});
