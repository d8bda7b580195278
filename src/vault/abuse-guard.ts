/**
 * Abuse controls. Failed authentications are counted per IP in one-minute
 * windows; past KEYWARD_AUTH_FAILURES the IP gets 429 too_many_failures on
 * every authenticated endpoint for KEYWARD_AUTH_COOLDOWN_S, which makes
 * guessing tokens pointless. Per instance, in memory, bounded.
 */
import { LRUCache } from 'lru-cache';
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
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
  private readonly ips = new LRUCache<string, Window>({ max: 100_000 });

  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(AuditLog) private readonly audit: AuditLog,
    @inject(Symbols.Logger) private readonly log: Logger,
  ) {}

  /** Throws 429 too_many_failures while `ip` is cooling down. */
  check(ip: string): void {
    const w = this.ips.get(ip);
    if (!w) return;
    const now = this.clock.now();
    if (now < w.coolUntil) throw Errors.tooManyFailures(Math.ceil((w.coolUntil - now) / 1000));
  }

  /** A failed authentication: audited (no organisation, never the presented value) and counted against `ip`. */
  authFailed(ip: string, requestId: string, target: string): void {
    this.audit.record({ requestId, org: '', actor: 'anonymous', action: 'auth.failed', target, outcome: 'denied', ip });
    if (this.count(ip)) this.log.warn({ ip, request_id: requestId }, 'too many failed authentications; cooling down');
  }

  /** Counts a failure; true when it started a cool-down. */
  private count(ip: string): boolean {
    const now = this.clock.now();
    let w = this.ips.get(ip);
    if (!w || now - w.start >= WINDOW_MS) {
      w = { start: now, failures: 0, coolUntil: w?.coolUntil ?? 0 };
      this.ips.set(ip, w);
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
