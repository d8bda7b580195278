/** Clocks for tests: one that only moves when told, one that never repeats a millisecond. */
import type { Clock } from '../../src/clock.js';

export class ManualClock implements Clock {
  constructor(private ms = Date.UTC(2026, 10, 15, 12, 0, 0)) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}

/** Real time, but strictly increasing: records made back to back never share a created_at. */
export function monotonicClock(): Clock {
  let last = 0;
  return { now: () => (last = Math.max(Date.now(), last + 1)) };
}

export const RFC3339_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
