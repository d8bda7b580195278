/** Time, as a port, so expiry can be tested to the second without sleeping. */
export interface Clock {
  now(): number;
}
export const systemClock: Clock = { now: () => Date.now() };

/**
 * Creation times that never repeat within this process, so lists ordered
 * newest first are exact even for records made in the same millisecond.
 */
export class CreationTimes {
  private last = 0;

  constructor(private readonly clock: Clock) {}

  next(): number {
    const now = this.clock.now();
    this.last = now > this.last ? now : this.last + 1;
    return this.last;
  }
}
