/**
 * The store contract's MCP authorization part (contract.ts runs it for every adapter): a registered client is
 * stored and read back; a grant is created, read, and changed only by compare-and-set on its version (of two
 * writers with the same expected version, one after the other, the second changes nothing); a principal's
 * grants are listed, and no one else's. The clean-up: grants whose end (mcpGrantEnd, moved by every update) has
 * passed are deleted, in batches of the limit; registered clients last used before the cut-off are deleted unless
 * a grant names them, and a use (touch) keeps one.
 */
import type { TestFn } from 'ava';
import type { McpClientRecord, McpGrantRecord } from '../../src/store/ports.js';
import { mcpGrantEnd } from '../../src/store/mcp-grant-port.js';
import { newId } from '../../src/ids.js';
import type { StoreHarness } from './contract.js';

function grant(principal: string, over: Partial<McpGrantRecord> = {}): McpGrantRecord {
  return {
    id: newId('mcpg'), orgId: newId('org'), credentialId: newId('cred'), resource: 'https://keyward.test/v1/mcp/cred_x', clientId: 'https://app.example/client.json',
    principal, tools: ['get_issue'], state: 'code', codeHash: 'a'.repeat(64), redirectUri: 'http://127.0.0.1:1/cb', codeChallenge: 'c'.repeat(43), codeExpiresAt: 1,
    refreshHash: null, usedRefreshHashes: [], issued: [], createdAt: 1, expiresAt: 2, version: 1, ...over,
  };
}

export function mcpGrantContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  test(n('MCP grants: clients stored, grants compare-and-set on their version, listed by principal'), async (t) => {
    const store = await (await h.backend(t)).open();
    const client = { id: newId('mcpc'), name: 'A client', redirectUris: ['http://127.0.0.1:5/cb'], createdAt: 7 };
    await store.createMcpClient(client);
    t.deepEqual(await store.getMcpClient(client.id), client);
    t.is(await store.getMcpClient(newId('mcpc')), undefined);

    const principal = newId('otk');
    const g = grant(principal);
    await store.createMcpGrant(g);
    t.deepEqual(await store.getMcpGrant(g.id), g);
    const active: McpGrantRecord = { ...g, state: 'active', refreshHash: 'b'.repeat(64), issued: [{ id: newId('tok'), expiresAt: 9 }], version: 2 };
    const revoked: McpGrantRecord = { ...g, state: 'revoked', version: 2 };
    t.true(await store.updateMcpGrant(active, 1), 'the first writer with the read version wins');
    t.false(await store.updateMcpGrant(revoked, 1), 'a second writer with the same expected version changes nothing');
    const stored = (await store.getMcpGrant(g.id))!;
    t.is(stored.version, 2);
    t.false(await store.updateMcpGrant({ ...stored, state: 'revoked', version: 3 }, 1), 'a stale version changes nothing');
    t.deepEqual(await store.getMcpGrant(g.id), stored);

    const second = grant(principal);
    await store.createMcpGrant(second);
    await store.createMcpGrant(grant(newId('otk')));
    t.deepEqual((await store.listMcpGrantsByPrincipal(principal)).map((x) => x.id).sort(), [g.id, second.id].sort());
    t.deepEqual(await store.listMcpGrantsByPrincipal(newId('usr' as 'otk')), []);
  });

  test(n('MCP grants: ended grants are purged (the end moves with each update), in batches'), async (t) => {
    const store = await (await h.backend(t)).open();
    const principal = newId('otk');
    const unredeemed = grant(principal, { state: 'consent', codeExpiresAt: 10, expiresAt: 1000 });
    const active = grant(principal, { state: 'active', refreshHash: 'b'.repeat(64), codeExpiresAt: 5, expiresAt: 100 });
    const revoked = grant(principal, { state: 'revoked', issued: [{ id: newId('tok'), expiresAt: 30 }, { id: newId('tok'), expiresAt: 20 }], expiresAt: 1000 });
    const later = grant(principal, { state: 'active', refreshHash: 'c'.repeat(64), expiresAt: 1000 });
    t.deepEqual([unredeemed, active, revoked, later].map(mcpGrantEnd), [10, 100, 30, 1000]);
    for (const g of [unredeemed, active, revoked, later]) await store.createMcpGrant(g);

    t.is(await store.purgeMcpGrants(9, 10), 0, 'nothing has ended yet');
    t.is(await store.purgeMcpGrants(30, 10), 2, 'the expired code and the revoked grant whose tokens have ended');
    t.is(await store.getMcpGrant(unredeemed.id), undefined);
    t.is(await store.getMcpGrant(revoked.id), undefined);
    t.truthy(await store.getMcpGrant(active.id), 'an active grant lives to its end');
    // Revoked now, with no token issued: it ends at once, though its refresh tokens would have lasted.
    t.true(await store.updateMcpGrant({ ...later, state: 'revoked', refreshHash: null, version: 2 }, 1));
    t.is(await store.purgeMcpGrants(31, 1), 1, 'at most the limit');
    t.is(await store.getMcpGrant(later.id), undefined);
    t.is(await store.purgeMcpGrants(100, 10), 1, 'the active grant at its end');
    t.deepEqual(await store.listMcpGrantsByPrincipal(principal), []);
  });

  test(n('MCP grants: registered clients unused since the cut-off and named by no grant are purged; a use keeps one'), async (t) => {
    const store = await (await h.backend(t)).open();
    const client = (createdAt: number): McpClientRecord => ({ id: newId('mcpc'), name: 'A client', redirectUris: ['http://127.0.0.1:5/cb'], createdAt });
    const unused = client(10);
    const named = client(10);
    const touched = client(10);
    const recent = client(500);
    for (const c of [unused, named, touched, recent]) await store.createMcpClient(c);
    await store.createMcpGrant(grant(newId('otk'), { clientId: named.id, state: 'active', expiresAt: 10_000 }));
    await store.touchMcpClient(touched.id, 400);
    await store.touchMcpClient(newId('mcpc'), 400);
    t.deepEqual(await store.getMcpClient(touched.id), { ...touched, lastUsedAt: 400 });

    t.is(await store.purgeMcpClients(300, 10), 1);
    t.is(await store.getMcpClient(unused.id), undefined, 'registered long ago, never used, no grant');
    for (const kept of [named, touched, recent]) t.truthy(await store.getMcpClient(kept.id));
    t.is(await store.purgeMcpClients(300, 10), 0, 'a second run finds nothing');
    t.is(await store.purgeMcpGrants(10_000, 10), 1);
    t.is(await store.purgeMcpClients(300, 10), 1, 'its grant gone, the named client goes too');
    t.is(await store.purgeMcpClients(1000, 1), 1, 'at most the limit');
    t.is(await store.purgeMcpClients(1000, 10), 1);
  });
}
