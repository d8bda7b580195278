/**
 * The proxy's read-through cache (tokens by hash, decrypted keys by
 * credential id): a bounded LRU with a TTL, concurrent misses for one key
 * coalesced into one load, and invalidation that is never undone by a load
 * begun before it (that load's result is served once, never cached).
 */
import { LRUCache } from 'lru-cache';

export class CoalescingCache<V extends {}> {
  private readonly cache: LRUCache<string, V>;
  private readonly inflight = new Map<string, Promise<V | undefined>>();
  private generation = 0;
  hits = 0;
  misses = 0;

  constructor(max: number, ttlMs: number) {
    this.cache = new LRUCache<string, V>({ max, ttl: ttlMs });
  }

  /** The cached value, else `load()`'s (shared with concurrent callers); undefined results are not cached. */
  async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      this.hits++;
      return cached;
    }
    this.misses++;
    let pending = this.inflight.get(key);
    if (!pending) {
      const generation = this.generation;
      pending = load().then((value) => {
        if (value !== undefined && generation === this.generation) this.cache.set(key, value);
        return value;
      }).finally(() => {
        if (this.inflight.get(key) === pending) this.inflight.delete(key);
      });
      this.inflight.set(key, pending);
    }
    return pending;
  }

  /** Drops the entries `match` selects, and every load in flight (it may carry what changed). */
  forget(match: (value: V, key: string) => boolean): void {
    this.generation++;
    this.inflight.clear();
    for (const [key, value] of this.cache.entries()) if (match(value, key)) this.cache.delete(key);
  }

  forgetKey(key: string): void {
    this.generation++;
    this.inflight.clear();
    this.cache.delete(key);
  }

  clear(): void {
    this.forget(() => true);
  }
}
