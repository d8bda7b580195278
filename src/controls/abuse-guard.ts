/**
 * Abuse controls. Failed authentications are counted per client address
 * (src/controls/client-address.ts; IPv6 by its /64) in one-minute windows; past
 * KEYWARD_AUTH_FAILURES the address cools down for KEYWARD_AUTH_COOLDOWN_S:
 * a request from it that fails authentication gets 429 too_many_failures
 * instead of 401, which makes guessing tokens pointless. A request whose token
 * is valid is never refused, so one attacker cannot lock out everyone behind
 * the same address. Per instance, in memory, bounded.
 */
import type { LRUCache } from 'lru-cache';
import { boundedLru } from '../lru.js';
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { addressBucket } from './client-address.js';
import { ApiError, Errors } from '../errors.js';
import type { Logger } from '../log.js';
import { Symbols } from '../symbols.js';
import { AuditLog } from './audit-log.js';

interface Window {
  start: number;
  failures: number;
  coolUntil: number;
}

const WINDOW_MS = 60_000;

@injectable()
export class AbuseGuard {
  private made: LRUCache<string, Window> | undefined;

  /** Made at the first failed authentication: an LRU preallocates its 100k slots (~8 ms at start), and most starts see none. */
  private get ips(): LRUCache<string, Window> {
    return (this.made ??= boundedLru<string, Window>(100_000));
  }

  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(AuditLog) private readonly audit: AuditLog,
    @inject(Symbols.Logger) private readonly log: Logger,
  ) {}

  /**
   * A failed authentication from client address `ip`. While its bucket cools
   * down: the 429 to answer instead of `err` (not audited or counted again, so
   * a flood costs nothing more). Otherwise audited (no organisation, never the
   * presented value), counted, and `err` is answered.
   */
  authFailed(ip: string, requestId: string, target: string, err: ApiError): ApiError {
    const bucket = addressBucket(ip);
    const now = this.clock.now();
    const coolUntil = this.ips.get(bucket)?.coolUntil ?? 0;
    if (now < coolUntil) return Errors.tooManyFailures(Math.ceil((coolUntil - now) / 1000));
    this.audit.record({ requestId, org: '', actor: 'anonymous', action: 'auth.failed', target, outcome: 'denied', ip });
    if (this.count(bucket, now)) this.log.warn({ ip, bucket, request_id: requestId }, 'too many failed authentications; cooling down');
    return err;
  }

  /** Counts a failure against `bucket`; true when it started a cool-down. */
  private count(bucket: string, now: number): boolean {
    let w = this.ips.get(bucket);
    if (!w || now - w.start >= WINDOW_MS) {
      w = { start: now, failures: 0, coolUntil: w?.coolUntil ?? 0 };
      this.ips.set(bucket, w);
    }
    w.failures++;
    // KEYWARD_AUTH_FAILURES failures in a minute, then the cool-down: the next request is refused.
    if (w.failures >= this.config.authFailures && now >= w.coolUntil) {
      w.coolUntil = now + this.config.authCooldownS * 1000;
      w.start = now;
      w.failures = 0;
      return true;
    }
    return false;
  }
}
