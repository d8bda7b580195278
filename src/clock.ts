/**
 * Time, as ports, so expiry and periodic work can be tested to the millisecond without sleeping:
 * the wall clock (`Clock`, for dates and expiries) and the timers (`Timers`: the monotonic time that
 * ages and intervals are measured on, and what runs later or every so often). Tests pass their own
 * (AppOptions.clock, AppOptions.timers; test/support/clocks.ts moves both on demand).
 */
export interface Clock {
  now(): number;
  /**
   * Milliseconds that only move forward (never set back, never stepped by NTP), for a holder's own view of its
   * lease's expiry. A clock without it (tests' ManualClock) uses now().
   */
  monotonic?(): number;
}
export const systemClock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };

export interface Timers {
  /** Milliseconds on a monotonic clock: for ages and intervals, never for dates. */
  elapsed(): number;
  /** Calls `fn` once after `ms` unless the returned function is called first. Never keeps the process alive. */
  after(ms: number, fn: () => unknown): () => void;
  /** Calls `fn` every `ms` until the returned function is called. Never keeps the process alive. */
  every(ms: number, fn: () => unknown): () => void;
}

export const systemTimers: Timers = {
  elapsed: () => performance.now(),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
  every: (ms, fn) => {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};
