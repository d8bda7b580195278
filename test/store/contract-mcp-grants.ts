/**
 * The store contract's MCP authorization part (contract.ts runs it for every adapter): a registered client is
 * stored and read back; a grant is created, read, and changed only by compare-and-set on its version (of two
 * writers with the same expected version, one after the other, the second changes nothing); a principal's
 * grants are listed, and no one else's.
 */
import type { TestFn } from 'ava';
import type { McpGrantRecord } from '../../src/store/ports.js';
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
}
