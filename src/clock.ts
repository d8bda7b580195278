/** Time, as a port, so expiry can be tested to the second without sleeping. */
export interface Clock {
  now(): number;
  /**
   * Milliseconds that only move forward (never set back, never stepped by NTP), for a holder's own view of its
   * lease's expiry. A clock without it (tests' ManualClock) uses now().
   */
  monotonic?(): number;
}
export const systemClock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };
