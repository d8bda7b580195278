/**
 * /readyz's answer: one shared check of the store and key wrapper, so a flood of probes never becomes a
 * flood of store pings. Probes share the round of checking in flight; its result is reused, a success for
 * READY_MAX_AGE_MS (from when its ping began), a failure for FAILED_MAX_AGE_MS. Within a round a fresh ping
 * starts every ATTEMPT_MS until one answers: after an outage the store client retries a call only after
 * a backoff of a second or more, and a ping caught in that backoff must not hold readiness back while a
 * fresh one would already succeed. So readiness is back within about a second of the store answering.
 * A result's age is measured on the injected monotonic clock (tests move it); a round's own attempts and
 * deadline bound real network calls, so they run on real timers.
 */
import type { Logger } from '../log.js';

/** A round gives up (not ready) after this long. */
const READY_TIMEOUT_MS = 2000;
const READY_MAX_AGE_MS = 2000;
const FAILED_MAX_AGE_MS = 1000;
/** Within a round, a fresh ping this often while none has answered. */
const ATTEMPT_MS = 250;

export class Readiness {
  private result: { ok: boolean; until: number } | undefined;
  private round: Promise<boolean> | undefined;

  constructor(private readonly check: () => Promise<void>, private readonly log: Logger, private readonly elapsed: () => number = () => performance.now()) {}

  /** Whether the store and key wrapper answer (a shared, recent check); never rejects. */
  ready(): Promise<boolean> {
    if (this.result && this.elapsed() < this.result.until) return Promise.resolve(this.result.ok);
    return (this.round ??= this.run());
  }

  private run(): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      let done = false;
      const finish = (ok: boolean, pingStarted: number, err?: unknown) => {
        if (done) return;
        done = true;
        clearInterval(attempts);
        clearTimeout(deadline);
        if (!ok) this.log.warn({ err }, 'not ready');
        this.result = { ok, until: ok ? pingStarted + READY_MAX_AGE_MS : this.elapsed() + FAILED_MAX_AGE_MS };
        this.round = undefined;
        resolve(ok);
      };
      const ping = () => {
        const started = this.elapsed();
        this.check().then(() => finish(true, started), (err: unknown) => finish(false, started, err));
      };
      const attempts = setInterval(ping, ATTEMPT_MS);
      const deadline = setTimeout(() => finish(false, 0, new Error('timeout')), READY_TIMEOUT_MS);
      attempts.unref();
      deadline.unref();
      ping();
    });
  }
}
