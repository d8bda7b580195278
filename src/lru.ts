/**
 * A least-recently-used map bounded by a count, for every in-memory cache and window table of the server.
 *
 * lru-cache's own `max` allocates arrays of that length up front; a table of 50,000 or 100,000 slots then costs
 * milliseconds at every start (and at every server a test builds) before it holds anything. Here each entry
 * weighs 1 under `maxSize`: the same bound, the same evictions (reported to `dispose` alike), memory as it fills.
 */
import { LRUCache } from 'lru-cache';

export function boundedLru<K extends {}, V extends {}>(max: number, options: Pick<LRUCache.Options<K, V, unknown>, 'dispose'> = {}): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: max, sizeCalculation: () => 1 });
}
