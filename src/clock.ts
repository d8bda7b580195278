/** Time, as a port, so expiry can be tested to the second without sleeping. */
export interface Clock {
  now(): number;
}
export const systemClock: Clock = { now: () => Date.now() };

