/**
 * Token buckets in memory, per key: `perMinute` capacity refilled continuously
 * at perMinute/60 a second, so a burst of up to the limit passes at once and
 * the sustained rate holds at the limit. Per instance: with N instances behind
 * one URL a token's ceiling is N × its rate_limit (documented).
 */
import type { LRUCache } from 'lru-cache';
import { boundedLru } from '../lru.js';
import { Errors } from '../errors.js';

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private made: LRUCache<string, Bucket> | undefined;

  /** Made on first use: only tokens with a `rate_limit` take from it, and an LRU preallocates its 100k slots (~8 ms at start). */
  private get buckets(): LRUCache<string, Bucket> {
    return (this.made ??= boundedLru<string, Bucket>(100_000));
  }

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Takes one request from `key`'s bucket, or throws 429 rate_limited with Retry-After. */
  take(key: string, perMinute: number, refusal = Errors.rateLimited): void {
    const now = this.now();
    const perMs = perMinute / 60_000;
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: perMinute, at: now };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(perMinute, b.tokens + (now - b.at) * perMs);
      b.at = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return;
    }
    throw refusal(Math.max(1, Math.ceil((1 - b.tokens) / perMs / 1000)));
  }

  /** Gives back the unit `take` took, for a request refused afterwards (quota, max_requests): only what is forwarded spends the rate. */
  refund(key: string, perMinute: number): void {
    const b = this.buckets.get(key);
    if (b) b.tokens = Math.min(perMinute, b.tokens + 1);
  }
}
