/**
 * The Firestore store's lease pools and their holders, without transactions (the emulator does not isolate
 * them). Under leases/{key}:
 *   blocks/{seq}    {seq, start, end, holder}: created once each with create(); block seq+1 starts where
 *                   block seq ends, and is only created with end <= limit, so the blocks tile [0, end).
 *                   Blocks are never deleted: a late copy of a claim that took one can never land.
 *   returns/{id}    {units}: units back in the pool. A claim takes one by deleting it with an exists
 *                   precondition (one taker wins; ids are never reused); a remainder is re-created.
 *   holders/{holder}#{seq}  one holder's state (HolderState). Write n creates #n and deletes #n−1 with an
 *                   exists precondition in one batch (with its pool documents): of two writes with one seq
 *                   at most one lands, and none lands once a later one has. Retiring or reclaiming deletes
 *                   the last one and creates returns/{holder}~end with the idle units (one of them wins).
 * Outstanding = end of the last block − units in returns/. A lost race (a block or returned document taken
 * first) reads again; an ambiguous failure is resolved by reading the holder back (its nonce says whose
 * write landed). Each write of a holder is a new document: no document is written twice.
 */
import type { CollectionReference, DocumentReference, DocumentSnapshot, QueryDocumentSnapshot, WriteBatch } from '@google-cloud/firestore';
import type { HolderOutcome, HolderState, HolderWrite, LeaseLedger, LeaseStore } from '../ports.js';
import { reclaimCutoff, unitsBackAtEnd } from '../lease-port.js';
import { Code, errCode, type FirestoreDb } from './db.js';

/** A lease key (`quota:org_…:2026-11`, `token:tok_…`) as a document id: no `/`, never `.`/`..`/`__…__`. */
const leaseDocId = (key: string): string => 'k_' + key.replace(/%/g, '%25').replace(/\//g, '%2F');
const holderDocId = (holder: string, seq: number): string => `${holder}#${String(seq).padStart(10, '0')}`;

/** Returned documents a claim reads, and takes in one batch (Firestore allows 500 writes per batch). */
const RETURNS_READ = 300;
const RETURNS_PER_GRANT = 100;
/** Expired holders reclaimed per call (one batch each). */
const RECLAIM_BATCH = 50;
/** Errors a batch fails with when another writer got there first. */
const RACE_CODES = new Set<number | undefined>([Code.NOT_FOUND, Code.ALREADY_EXISTS, Code.FAILED_PRECONDITION, Code.ABORTED]);

const shuffle = <T>(items: T[]): T[] => {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
};

const backoff = (round: number) => new Promise((r) => setTimeout(r, Math.random() * 3 * Math.min(round + 1, 10)));

function toState(d: DocumentSnapshot): HolderState {
  return {
    holder: d.get('holder'), seq: d.get('seq'), nonce: d.get('nonce'), granted: d.get('granted'), returned: d.get('returned'),
    used: d.get('used'), armed: d.get('armed'), expiresAt: d.get('expiresAt'),
  };
}


interface Pool {
  seq: number;
  end: number;
  returnedDocs: QueryDocumentSnapshot[];
  outstanding: number;
}

export class FirestoreLeases implements LeaseStore {
  constructor(private readonly db: FirestoreDb) {}

  private base(key: string): DocumentReference {
    return this.db.leases.doc(leaseDocId(key));
  }

  private holders(key: string): CollectionReference {
    return this.base(key).collection('holders');
  }

  writeHolder(key: string, state: HolderState, write: HolderWrite): Promise<HolderOutcome> {
    return this.db.rounds('lease', (round) => this.db.guard(() => this.writeRound(key, state, write, round)));
  }

  private async writeRound(key: string, state: HolderState, write: HolderWrite, round: number): Promise<HolderOutcome | undefined> {
    const base = this.base(key);
    const holders = this.holders(key);
    const batch = this.db.client.batch();
    const next: HolderState = { ...state };
    let pool: Pool | undefined;
    if (write.op === 'claim') {
      pool = await this.readPool(base, RETURNS_READ);
      let room = write.limit - pool.outstanding;
      if (room < Math.max(1, write.min) && (await this.reclaimExpiredIn(key, write.now)) > 0) {
        pool = await this.readPool(base, RETURNS_READ);
        room = write.limit - pool.outstanding;
      }
      const granted = this.takeFromPool(batch, base, pool, write, room, state.holder);
      if (granted === 0) return { kind: 'refused', outstanding: pool.outstanding };
      next.granted += granted;
    } else if (write.op === 'release' && write.units > 0) {
      batch.create(base.collection('returns').doc(`${state.holder}~${state.seq}`), { units: write.units, at: Date.now() });
    }
    // Never more armed than is held: a bad state cannot mint units.
    next.armed = Math.max(0, Math.min(next.armed, next.granted - next.returned - next.used));
    if (write.op === 'retire') {
      const idle = unitsBackAtEnd(key, next);
      if (idle > 0) batch.create(base.collection('returns').doc(`${state.holder}~end`), { units: idle, at: Date.now() });
    } else {
      batch.create(holders.doc(holderDocId(state.holder, state.seq)), { ...next });
    }
    if (state.seq > 1) batch.delete(holders.doc(holderDocId(state.holder, state.seq - 1)), { exists: true });
    try {
      await this.db.commit(batch, 'lease');
      return pool ? { kind: 'written', state: next, outstanding: pool.outstanding + (next.granted - state.granted) } : { kind: 'written', state: next };
    } catch (err) {
      if (!RACE_CODES.has(errCode(err))) throw err;
    }
    // Lost a race, or our earlier attempt landed, or the holder is gone: the holder's documents say which.
    const current = await this.readHolderIn(holders, state.holder);
    if (current && current.seq === state.seq && current.nonce === state.nonce) return { kind: 'written', state: current };
    if (write.op === 'retire' && !current) return { kind: 'written', state: next };
    const before = state.seq - 1;
    if ((before === 0 && !current) || (current && current.seq === before)) {
      await backoff(round); // a block or returned document was taken first: read the pool again
      return undefined;
    }
    return { kind: 'conflict', current };
  }

  /**
   * Adds to `batch` what a claim takes (returned documents, shuffled, each deleted with an exists precondition;
   * then a new block) and returns how many units: between `min` and `want`, never past `room`, or 0.
   */
  private takeFromPool(batch: WriteBatch, base: DocumentReference, pool: Pool, write: Extract<HolderWrite, { op: 'claim' }>, room: number, holder: string): number {
    const need = Math.max(1, write.min);
    if (room < need) return 0;
    const target = Math.min(Math.max(need, write.want), room);
    let taken = 0;
    let docs = 0;
    for (const r of shuffle([...pool.returnedDocs])) {
      if (taken >= target || docs >= RETURNS_PER_GRANT) break;
      const units = r.get('units') as number;
      const take = Math.min(units, target - taken);
      batch.delete(r.ref, { exists: true });
      if (units > take) batch.create(base.collection('returns').doc(), { units: units - take, at: Date.now() });
      taken += take;
      docs++;
    }
    const size = Math.min(target - taken, write.limit - pool.end);
    if (taken + Math.max(0, size) < need) return 0;
    if (size > 0) {
      batch.create(base.collection('blocks').doc(String(pool.seq + 1).padStart(12, '0')), { seq: pool.seq + 1, start: pool.end, end: pool.end + size, holder, at: Date.now() });
    }
    return taken + Math.max(0, size);
  }

  readHolder(key: string, holder: string): Promise<HolderState | undefined> {
    return this.db.guard(() => this.readHolderIn(this.holders(key), holder));
  }

  private async readHolderIn(holders: CollectionReference, holder: string): Promise<HolderState | undefined> {
    const snap = await holders.where('holder', '==', holder).get();
    // One document per live holder (writes swap them in one batch); the newest wins should a late copy linger.
    const docs = snap.docs.map(toState).sort((a, b) => b.seq - a.seq);
    return docs[0];
  }

  reclaimExpired(key: string, now: number): Promise<number> {
    return this.db.guard(() => this.reclaimExpiredIn(key, now));
  }

  /** Each expired holder in its own batch: its last state deleted (exists), its idle units returned (one reclaimer wins). */
  private async reclaimExpiredIn(key: string, now: number): Promise<number> {
    const base = this.base(key);
    const expired = await this.holders(key).where('expiresAt', '<', reclaimCutoff(key, now)).limit(RECLAIM_BATCH).get();
    let n = 0;
    await Promise.all(expired.docs.map(async (d) => {
      const s = toState(d);
      const batch = this.db.client.batch();
      batch.delete(d.ref, { exists: true });
      const idle = unitsBackAtEnd(key, s);
      if (idle > 0) batch.create(base.collection('returns').doc(`${s.holder}~end`), { units: idle, at: Date.now() });
      try {
        await this.db.commit(batch, 'lease');
        n++;
      } catch (err) {
        if (!RACE_CODES.has(errCode(err))) throw err; // renewed, retired or reclaimed by someone else meanwhile
      }
    }));
    return n;
  }

  leaseLedger(key: string, now: number): Promise<LeaseLedger> {
    return this.db.guard(async () => {
      await this.reclaimExpiredIn(key, now);
      const base = this.base(key);
      const [outstanding, holders] = await Promise.all([this.outstanding(base), this.holders(key).get()]);
      const held = holders.docs.map(toState).reduce((n, s) => n + Math.max(0, s.granted - s.returned - s.used), 0);
      // Read apart, the two can disagree for a moment: never show more than is out.
      const shown = Math.min(held, outstanding);
      return { outstanding, used: outstanding - shown, held: shown };
    });
  }

  async chargeLease(key: string, units: number): Promise<void> {
    if (units <= 0) return;
    const base = this.base(key);
    await this.db.rounds('lease', (round) => this.db.guard(async () => {
      const pool = await this.readPool(base, 0);
      const batch = this.db.client.batch();
      batch.create(base.collection('blocks').doc(String(pool.seq + 1).padStart(12, '0')), { seq: pool.seq + 1, start: pool.end, end: pool.end + units, holder: '', at: Date.now() });
      try {
        await this.db.commit(batch, 'lease');
        return true;
      } catch (err) {
        if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
        await backoff(round);
        return undefined;
      }
    }));
  }

  /**
   * The pool as one read: the last block (its seq and end: every unit ever granted) and up to `returnsRead`
   * returned documents (all when 0 is not given… see outstanding()). Returns past those read only make
   * `outstanding` larger than it is, so a grant computed from it never passes the limit.
   */
  private async readPool(base: DocumentReference, returnsRead: number): Promise<Pool> {
    const blocks = base.collection('blocks');
    const [lastSnap, returnedSnap] = await Promise.all([
      blocks.orderBy('seq', 'desc').limit(1).get(),
      returnsRead > 0 ? base.collection('returns').limit(returnsRead).get() : undefined,
    ]);
    const last = lastSnap.docs[0];
    const seq: number = last?.get('seq') ?? 0;
    const end: number = last?.get('end') ?? 0;
    const returnedDocs = returnedSnap?.docs ?? [];
    const returned = returnedDocs.reduce((n, d) => n + (d.get('units') as number), 0);
    return { seq, end, returnedDocs, outstanding: end - returned };
  }

  private async outstanding(base: DocumentReference): Promise<number> {
    const [last, returned] = await Promise.all([
      base.collection('blocks').orderBy('seq', 'desc').limit(1).get(),
      base.collection('returns').get(),
    ]);
    const end: number = last.docs[0]?.get('end') ?? 0;
    return end - returned.docs.reduce((n, d) => n + (d.get('units') as number), 0);
  }
}
