/**
 * The Firestore store's quota leases, without transactions. Under leases/{key}:
 *   blocks/{seq}  {seq, start, end}: created once each with create(); block
 *                 seq+1 starts where block seq ends (blocks are immutable), so
 *                 the blocks tile [0, end) without overlap, and a block is
 *                 only created with end <= limit. Two instances that read the
 *                 same last block race to create the same next seq: one wins,
 *                 the other re-reads and tries seq+2.
 *   returns/{id}  {units}: units handed back by `release`. A lease takes a
 *                 returned document by deleting it with an exists
 *                 precondition (only one deleter succeeds; ids are never
 *                 reused); a remainder beyond `want` is re-created in the same
 *                 batch.
 * Units outstanding = end of the last block - units in returns/ <= limit. A
 * crash between a grant and its use only loses units (never over-grants).
 *
 * `leaseAtLeast` (spend reservations: all of a request's worst case or none)
 * makes its whole grant one batch: the returned documents it takes (each
 * deleted with an exists precondition, a remainder re-created), and the next
 * block for the rest (create()). The batch commits whole or not at all, so a
 * grant is never a part of `min`; a lost race (a document gone, the block
 * taken) reads again.
 */
import type { CollectionReference, DocumentReference, QueryDocumentSnapshot } from '@google-cloud/firestore';
import type { LeaseStore } from '../ports.js';
import { Code, errCode, type FirestoreDb } from './db.js';

/** A lease key (`quota:org_…:2026-11`, `token:tok_…`) as a document id: no `/`, never `.`/`..`/`__…__`. */
const leaseDocId = (key: string): string => 'k_' + key.replace(/%/g, '%25').replace(/\//g, '%2F');

/** Returned documents a grant reads, and takes in one batch (Firestore allows 500 writes per batch). */
const RETURNS_READ = 300;
const RETURNS_PER_GRANT = 100;

const shuffle = <T>(items: T[]): T[] => {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
};

export class FirestoreLeases implements LeaseStore {
  constructor(private readonly db: FirestoreDb) {}

  private base(key: string): DocumentReference {
    return this.db.leases.doc(leaseDocId(key));
  }

  lease(key: string, limit: number, want: number): Promise<{ granted: number; leased: number }> {
    if (want <= 0) return this.db.guard(async () => ({ granted: 0, leased: await this.leasedNow(key) }));
    const base = this.base(key);
    const blocks = base.collection('blocks');
    const returns = base.collection('returns');
    return this.db.rounds('lease', (round) => this.db.guard(async () => {
      const { seq, end, returnedDocs, outstanding } = await this.readLedger(blocks, returns, 100);
      const room = limit - outstanding;
      if (room <= 0) return { granted: 0, leased: outstanding };

      // Returned units first (at most one returned document per round)…
      let granted = 0;
      let contended = false;
      for (const r of shuffle([...returnedDocs])) {
        const units = r.get('units') as number;
        const take = Math.min(want, units, room);
        if (take <= 0) continue;
        const batch = this.db.client.batch();
        batch.delete(r.ref, { exists: true });
        if (units > take) batch.create(returns.doc(), { units: units - take, at: Date.now() });
        try {
          await batch.commit();
          granted = take;
          break;
        } catch (err) {
          if (errCode(err) !== Code.NOT_FOUND) throw err;
          contended = true; // someone else took it; try the next
        }
      }

      // …then a new block for the rest, never past the limit.
      const size = Math.min(want - granted, limit - end);
      if (size <= 0) {
        if (granted === 0 && contended) return undefined;
        return { granted, leased: outstanding + granted };
      }
      try {
        await blocks.doc(String(seq + 1).padStart(12, '0')).create({ seq: seq + 1, start: end, end: end + size, at: Date.now() });
        return { granted: granted + size, leased: outstanding + granted + size };
      } catch (err) {
        if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
        // Another instance took block seq+1: keep what we have, or read again.
        if (granted > 0) return { granted, leased: outstanding + granted };
        await new Promise((r) => setTimeout(r, Math.random() * 3 * Math.min(round + 1, 10)));
        return undefined;
      }
    }));
  }

  leaseAtLeast(key: string, limit: number, min: number, want: number): Promise<{ granted: number; leased: number }> {
    const need = Math.max(1, min);
    const most = Math.max(need, want);
    const base = this.base(key);
    const blocks = base.collection('blocks');
    const returns = base.collection('returns');
    return this.db.rounds('lease', (round) => this.db.guard(async () => {
      const { seq, end, returnedDocs, outstanding } = await this.readLedger(blocks, returns, RETURNS_READ);
      // Returns past those read only make `room` smaller than it is: never a grant past the limit.
      const room = limit - outstanding;
      if (room < need) return { granted: 0, leased: outstanding };
      const target = Math.min(most, room);
      const batch = this.db.client.batch();
      let taken = 0;
      let docs = 0;
      for (const r of shuffle([...returnedDocs])) {
        if (taken >= target || docs >= RETURNS_PER_GRANT) break;
        const units = r.get('units') as number;
        const take = Math.min(units, target - taken);
        batch.delete(r.ref, { exists: true });
        if (units > take) batch.create(returns.doc(), { units: units - take, at: Date.now() });
        taken += take;
        docs++;
      }
      const size = Math.min(target - taken, limit - end);
      if (taken + size < need) return { granted: 0, leased: outstanding };
      if (size > 0) batch.create(blocks.doc(String(seq + 1).padStart(12, '0')), { seq: seq + 1, start: end, end: end + size, at: Date.now() });
      try {
        await batch.commit();
        return { granted: taken + size, leased: outstanding + taken + size };
      } catch (err) {
        const code = errCode(err);
        if (code !== Code.NOT_FOUND && code !== Code.ALREADY_EXISTS && code !== Code.FAILED_PRECONDITION && code !== Code.ABORTED) throw err;
        // Another instance took a returned document or block seq+1 first: read again.
        await new Promise((r) => setTimeout(r, Math.random() * 3 * Math.min(round + 1, 10)));
        return undefined;
      }
    }));
  }

  /**
   * A counter's ledger as one read: the last block (its seq and end: every unit ever granted) and up to
   * `returnsRead` returned documents. `outstanding` = end − what those return; returns past the read only
   * make it larger than it is, so a grant computed from it never passes the limit.
   */
  private async readLedger(blocks: CollectionReference, returns: CollectionReference, returnsRead: number): Promise<{ seq: number; end: number; returnedDocs: QueryDocumentSnapshot[]; outstanding: number }> {
    const [lastSnap, returnedSnap] = await Promise.all([blocks.orderBy('seq', 'desc').limit(1).get(), returns.limit(returnsRead).get()]);
    const last = lastSnap.docs[0];
    const seq: number = last?.get('seq') ?? 0;
    const end: number = last?.get('end') ?? 0;
    const returned = returnedSnap.docs.reduce((n, d) => n + (d.get('units') as number), 0);
    return { seq, end, returnedDocs: returnedSnap.docs, outstanding: end - returned };
  }

  /** Hands units back; never more than are out (as SQLite's MAX(0, leased - units)), so a bad release cannot mint units. */
  release(key: string, units: number): Promise<void> {
    if (units <= 0) return Promise.resolve();
    return this.db.guard(async () => {
      const out = Math.min(units, await this.leasedNow(key));
      if (out <= 0) return;
      await this.base(key).collection('returns').doc().create({ units: out, at: Date.now() });
    });
  }

  leased(key: string): Promise<number> {
    return this.db.guard(() => this.leasedNow(key));
  }

  private async leasedNow(key: string): Promise<number> {
    const base = this.base(key);
    const [last, returned] = await Promise.all([
      base.collection('blocks').orderBy('seq', 'desc').limit(1).get(),
      base.collection('returns').get(),
    ]);
    const end: number = last.docs[0]?.get('end') ?? 0;
    return end - returned.docs.reduce((n, d) => n + (d.get('units') as number), 0);
  }
}
