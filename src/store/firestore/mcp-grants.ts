/**
 * The Firestore store's MCP authorization records (mcp-grant-port.ts): mcp_clients/{id} and mcp_grants/{id}, each
 * the record as a JSON string beside the fields a read needs (a grant's `principal`, served by Firestore's
 * single-field index, and its `version`). A grant's update is a transaction that reads the version, compares it
 * and writes: of two instances redeeming one code or rotating one refresh token, one wins. The sweep's fields:
 * a grant's `clientId` and `endsAt`, a client's `lastUsed` (single-field indexes; documents written before them
 * lack them and are left alone).
 */
import type { CollectionReference } from '@google-cloud/firestore';
import { mcpGrantEnd, type McpClientRecord, type McpGrantRecord, type McpGrantStore } from '../mcp-grant-port.js';
import type { FirestoreDb } from './db.js';

/** A document id must not hold a slash (it would name another path); ids are checked upstream, this is the last word. */
const usable = (id: string): boolean => id.length > 0 && id.length <= 64 && !id.includes('/');

export class FirestoreMcpGrants implements McpGrantStore {
  private readonly clients: CollectionReference;
  private readonly grants: CollectionReference;

  constructor(private readonly db: FirestoreDb) {
    this.clients = db.client.collection('mcp_clients');
    this.grants = db.client.collection('mcp_grants');
  }

  createMcpClient(c: McpClientRecord): Promise<void> {
    return this.db.guard(async () => { await this.clients.doc(c.id).create({ data: JSON.stringify(c), lastUsed: c.lastUsedAt ?? c.createdAt }); });
  }

  getMcpClient(id: string): Promise<McpClientRecord | undefined> {
    return this.db.guard(async () => {
      if (!usable(id)) return undefined;
      const d = await this.clients.doc(id).get();
      return d.exists ? (JSON.parse(d.get('data')) as McpClientRecord) : undefined;
    });
  }

  createMcpGrant(g: McpGrantRecord): Promise<void> {
    return this.db.guard(async () => { await this.grants.doc(g.id).create({ principal: g.principal, version: g.version, data: JSON.stringify(g), clientId: g.clientId, endsAt: mcpGrantEnd(g) }); });
  }

  getMcpGrant(id: string): Promise<McpGrantRecord | undefined> {
    return this.db.guard(async () => {
      if (!usable(id)) return undefined;
      const d = await this.grants.doc(id).get();
      return d.exists ? (JSON.parse(d.get('data')) as McpGrantRecord) : undefined;
    });
  }

  updateMcpGrant(next: McpGrantRecord, expectedVersion: number): Promise<boolean> {
    return this.db.guard(() => this.db.client.runTransaction(async (tx) => {
      const ref = this.grants.doc(next.id);
      const d = await tx.get(ref);
      if (!d.exists || d.get('version') !== expectedVersion) return false;
      tx.update(ref, { version: next.version, data: JSON.stringify(next), endsAt: mcpGrantEnd(next) });
      return true;
    }));
  }

  listMcpGrantsByPrincipal(principal: string): Promise<McpGrantRecord[]> {
    return this.db.guard(async () => {
      const snap = await this.grants.where('principal', '==', principal).get();
      return snap.docs.map((d) => JSON.parse(d.get('data')) as McpGrantRecord).sort((a, b) => (a.id < b.id ? -1 : 1));
    });
  }

  touchMcpClient(id: string, at: number): Promise<void> {
    return this.db.guard(() => this.db.client.runTransaction(async (tx) => {
      if (!usable(id)) return;
      const ref = this.clients.doc(id);
      const d = await tx.get(ref);
      if (!d.exists) return;
      tx.update(ref, { data: JSON.stringify({ ...(JSON.parse(d.get('data')) as McpClientRecord), lastUsedAt: at }), lastUsed: at });
    }));
  }

  purgeMcpGrants(now: number, limit: number): Promise<number> {
    return this.db.guard(async () => {
      const snap = await this.grants.where('endsAt', '<=', now).limit(limit).get();
      if (snap.empty) return 0;
      const batch = this.db.client.batch();
      for (const d of snap.docs) batch.delete(d.ref);
      await batch.commit();
      return snap.size;
    });
  }

  purgeMcpClients(unusedBefore: number, limit: number): Promise<number> {
    return this.db.guard(async () => {
      const snap = await this.clients.where('lastUsed', '<', unusedBefore).limit(limit).get();
      let deleted = 0;
      for (const d of snap.docs) {
        // Deleted in a transaction that sees no grant naming it: a consent being given right now keeps it.
        const gone = await this.db.client.runTransaction(async (tx) => {
          const named = await tx.get(this.grants.where('clientId', '==', d.id).limit(1));
          const fresh = await tx.get(d.ref);
          if (!named.empty || !fresh.exists || (fresh.get('lastUsed') as number) >= unusedBefore) return false;
          tx.delete(d.ref);
          return true;
        });
        if (gone) deleted++;
      }
      return deleted;
    });
  }
}
