/**
 * The proxy's read-through cache (tokens by hash, decrypted keys by
 * credential id): a bounded LRU with a TTL, concurrent misses for one key
 * coalesced into one load, and invalidation that is never undone by a load
 * begun before it (that load's result is served once, never cached).
 *
 * Invalidation costs O(1) whatever the cache holds (a change event reaches
 * every instance, and one must never stall the proxy):
 * - by key: the entry is deleted, a load of that key in flight is disowned;
 * - by id (a token id): an index id → entry finds the one entry to delete;
 * - by group (a credential and all its tokens): the group's mark records the
 *   sequence number of its last invalidation. Every entry points at its
 *   group's mark and remembers the sequence number its load began at; an entry
 *   whose mark moved past that is a miss, and is evicted when next looked at.
 * Loads in flight are judged by the same marks when they finish, so only
 * loads of what was invalidated lose their result; others are cached.
 *
 * Every map is bounded: the id index holds only cached entries (it is pruned
 * when they go), and the marks of ids and groups live in bounded LRUs. A
 * group mark pushed out of its LRU is first set to invalidate its entries, so
 * losing a mark can only cost extra loads, never serve what was invalidated.
 *
 * While the change feed is not live (`isLive` false), an entry older than
 * `untrustedMs` is reloaded: revocation elsewhere still lands within about a
 * second through a feed outage.
 */
import type { LRUCache } from 'lru-cache';
import { boundedLru } from '../lru.js';

/** What a loaded value names for invalidation: its own id (a token's) and its group (its credential's). */
export interface Tags {
  id?: string;
  group?: string;
}

export interface CacheOptions<V> {
  max: number;
  ttlMs: number;
  /** A loaded value's id and group; without it, only `forgetKey` (and `clear`) invalidate. */
  tagsOf?: (value: V) => Tags;
  /** Whether the change feed is delivering; while it is not, entries are trusted `untrustedMs` at most. */
  isLive?: () => boolean;
  untrustedMs?: number;
  /** How many group and id marks are kept (default: 2 × max). */
  maxMarks?: number;
  /** Milliseconds, monotonic (tests pass their own). */
  now?: () => number;
}

/** The sequence number of a group's (or id's) last invalidation; shared by every entry of the group. */
interface Mark {
  at: number;
}

interface Entry<V> {
  value: V;
  key: string;
  id: string | undefined;
  mark: Mark;
  /** The sequence number when its load began: valid while `mark.at <= start`. */
  start: number;
  loadedAt: number;
}

interface Flight<V> {
  promise: Promise<V | undefined>;
  start: number;
  /** Its key was invalidated meanwhile: serve the result to its waiters, never cache it. */
  disowned: boolean;
}

/** No group: never invalidated by a mark (its key or id is). */
const UNGROUPED: Mark = Object.freeze({ at: 0 });
const UNTRUSTED_MS = 1000;

/** Names → marks, in a bounded LRU. `floor` covers names whose mark was pushed out. */
class Marks {
  private readonly lru: LRUCache<string, Mark>;
  /** The sequence number when a mark was last pushed out: a name without a mark may have been invalidated up to then. */
  private floor = 0;

  constructor(max: number, seq: () => number) {
    this.lru = boundedLru<string, Mark>(max, {
      dispose: (mark, _name, reason) => {
        if (reason !== 'evict') return;
        mark.at = Infinity; // entries still pointing at it can no longer be invalidated through it: end them now
        this.floor = seq();
      },
    });
  }

  /** The name's mark, made (at the floor) if it has none. */
  mark(name: string): Mark {
    let m = this.lru.get(name);
    if (!m) {
      m = { at: this.floor };
      this.lru.set(name, m);
    }
    return m;
  }

  /** When the name was last invalidated (as far as is known), without making a mark. */
  at(name: string): number {
    return this.lru.peek(name)?.at ?? this.floor;
  }

  get size(): number {
    return this.lru.size;
  }
}

export class CoalescingCache<V extends {}> {
  private readonly cache: LRUCache<string, Entry<V>>;
  private readonly inflight = new Map<string, Flight<V>>();
  /** Token id → its cached entry (removed with the entry). */
  private readonly ids = new Map<string, Entry<V>>();
  private readonly groups: Marks;
  private readonly idMarks: Marks;
  /** Counts invalidations; a load remembers the value when it begins. */
  private seq = 0;
  private readonly ttlMs: number;
  private readonly untrustedMs: number;
  private readonly tagsOf: ((value: V) => Tags) | undefined;
  private readonly isLive: () => boolean;
  private readonly now: () => number;
  hits = 0;
  misses = 0;

  constructor(options: CacheOptions<V>) {
    this.ttlMs = options.ttlMs;
    this.untrustedMs = options.untrustedMs ?? UNTRUSTED_MS;
    this.tagsOf = options.tagsOf;
    this.isLive = options.isLive ?? (() => true);
    this.now = options.now ?? (() => performance.now());
    this.cache = boundedLru<string, Entry<V>>(options.max, {
      dispose: (e) => {
        if (e.id !== undefined && this.ids.get(e.id) === e) this.ids.delete(e.id);
      },
    });
    const seq = () => this.seq;
    this.groups = new Marks(options.maxMarks ?? 2 * options.max, seq);
    this.idMarks = new Marks(options.maxMarks ?? 2 * options.max, seq);
  }

  /**
   * The cached value, else `load()`'s (shared with concurrent callers); undefined results are not cached. A hit
   * is returned as it is, not in a promise: the proxy looks up a token and a key on every request, and each
   * promise layer costs a microtask turn.
   */
  get(key: string, load: () => Promise<V | undefined>): V | Promise<V | undefined> {
    const e = this.cache.get(key);
    if (e !== undefined) {
      if (e.mark.at <= e.start) {
        const age = this.now() - e.loadedAt;
        if (age < this.ttlMs && (age < this.untrustedMs || this.isLive())) {
          this.hits++;
          return e.value;
        }
      }
      // Invalidated through its group, expired, or too old to trust without the feed.
      this.cache.delete(key);
    }
    this.misses++;
    let flight = this.inflight.get(key);
    if (!flight) {
      const f: Flight<V> = { start: this.seq, disowned: false, promise: undefined! };
      f.promise = load().then((value) => {
        if (value !== undefined) this.keep(key, value, f);
        return value;
      }).finally(() => {
        if (this.inflight.get(key) === f) this.inflight.delete(key);
      });
      this.inflight.set(key, f);
      flight = f;
    }
    return flight.promise;
  }

  /** Caches a load's value unless what it names was invalidated after the load began. */
  private keep(key: string, value: V, f: Flight<V>): void {
    if (f.disowned) return;
    const tags = this.tagsOf?.(value);
    if (tags?.id !== undefined && this.idMarks.at(tags.id) > f.start) return;
    const mark = tags?.group !== undefined ? this.groups.mark(tags.group) : UNGROUPED;
    if (mark.at > f.start) return;
    const entry: Entry<V> = { value, key, id: tags?.id, mark, start: f.start, loadedAt: this.now() };
    this.cache.set(key, entry);
    if (entry.id !== undefined) this.ids.set(entry.id, entry);
  }

  /** Drops the entry under `key`; a load of it in flight is served once, not cached. */
  forgetKey(key: string): void {
    this.seq++;
    this.cache.delete(key);
    const f = this.inflight.get(key);
    if (f) {
      f.disowned = true;
      this.inflight.delete(key);
    }
  }

  /** Drops the entry whose value has id `id` (found through the index); a load of it in flight is not cached. */
  forgetId(id: string): void {
    this.idMarks.mark(id).at = ++this.seq;
    const e = this.ids.get(id);
    if (e) this.cache.delete(e.key);
  }

  /** Every entry of `group` becomes a miss (evicted when next looked at); loads of the group in flight are not cached. */
  forgetGroup(group: string): void {
    this.groups.mark(group).at = ++this.seq;
  }

  /** Drops everything (tests, shutdown). */
  clear(): void {
    this.seq++;
    this.cache.clear();
    this.ids.clear();
    for (const f of this.inflight.values()) f.disowned = true;
    this.inflight.clear();
  }

  /** Sizes of the bounded structures (tests check they stay bounded). */
  sizes(): { entries: number; ids: number; groupMarks: number; idMarks: number; inflight: number } {
    return { entries: this.cache.size, ids: this.ids.size, groupMarks: this.groups.size, idMarks: this.idMarks.size, inflight: this.inflight.size };
  }
}
