/**
 * The pool port (re-exported by ports.ts): a pool is a named set of one organisation's credentials of one
 * provider that a pooled token spreads its requests over (src/gateway/upstream/pool-router.ts). Adapters:
 * sqlite/pools.ts, firestore/pools.ts; test/store/contract-pools.ts checks both.
 *
 * A pooled token is stored like any token, its `credentialId` holding the pool's id (`pool_…`): so a token is
 * created only while its pool exists, and deleting a pool deletes its tokens, exactly as for a credential.
 * A member's cooling (it answered 429/529 or failed) is written into the pool with a `pool` change in the
 * same write, so every instance skips it within a second; a change, a rename or a deletion is announced alike.
 */

import type { BAD_CURSOR, NamedPageQuery, Page } from './paging.js';

export type PoolStrategy = 'round_robin' | 'ordered' | 'least_busy';

export interface PoolMember {
  credentialId: string;
  /** Relative share under round_robin (1–100); ignored by the other strategies. */
  weight: number;
}

export interface PoolRecord {
  id: string;
  orgId: string;
  /** Every member's provider (one per pool). */
  provider: string;
  strategy: PoolStrategy;
  members: PoolMember[];
  /** Epoch ms until which a member is skipped, by credential id (past entries mean nothing). */
  cooling: Record<string, number>;
  name?: string;
  createdAt: number;
  updatedAt: number;
}

/** What a PATCH changes (absent: unchanged; `name: null` clears it). */
export interface PoolUpdate {
  name?: string | null;
  strategy?: PoolStrategy;
  members?: PoolMember[];
  updatedAt: number;
}

/** Whether a token's `credentialId` names a pool. */
export const isPoolId = (id: string): boolean => id.startsWith('pool_');

export interface PoolStore {
  createPool(record: PoolRecord): Promise<void>;
  getPool(orgId: string, id: string): Promise<PoolRecord | undefined>;
  listPools(orgId: string, page: NamedPageQuery): Promise<Page<PoolRecord> | typeof BAD_CURSOR>;
  /** Applies `update` and announces the pool; the record after it, or undefined (no such pool of this org). */
  updatePool(orgId: string, id: string, update: PoolUpdate): Promise<PoolRecord | undefined>;
  /** Deletes the pool and every token bound to it, announcing the pool; false: no such pool of this org. */
  deletePool(orgId: string, id: string): Promise<boolean>;
  /** Sets a member's cooling end (kept when a later one is stored) and announces the pool; false: no such pool. */
  coolPoolMember(orgId: string, id: string, credentialId: string, until: number): Promise<boolean>;
}
