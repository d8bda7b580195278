/**
 * Clocks for tests: one that only moves when told (and runs the timers due on the way, so a flush,
 * a poll or a cache's age is a step the test takes, not a second it waits), one that never repeats
 * a millisecond. Pass a ManualClock as `clock` (wall time) and/or `timers` (monotonic time and the
 * timers) to startApp; got's withServerAndFakeTimers is the model, without faking the globals.
 */
import { setImmediate as turn } from 'node:timers/promises';
import type { Clock, Timers } from '../../src/clock.js';

interface Scheduled {
  at: number;
  seq: number;
  fn: () => unknown;
  /** Repeat interval; undefined for a one-off. */
  every?: number;
}

export class ManualClock implements Clock, Timers {
  private mono = 0;
  private seq = 0;
  private readonly queue = new Set<Scheduled>();

  constructor(private ms = Date.UTC(2026, 10, 15, 12, 0, 0)) {}

  now(): number {
    return this.ms;
  }

  elapsed(): number {
    return this.mono;
  }

  after(ms: number, fn: () => unknown): () => void {
    const s: Scheduled = { at: this.mono + Math.max(1, ms), seq: this.seq++, fn };
    this.queue.add(s);
    return () => this.queue.delete(s);
  }

  every(ms: number, fn: () => unknown): () => void {
    const s: Scheduled = { at: this.mono + Math.max(1, ms), seq: this.seq++, fn, every: Math.max(1, ms) };
    this.queue.add(s);
    return () => this.queue.delete(s);
  }

  /** Moves time on without running anything (for code that only reads the clock). */
  advance(ms: number): void {
    this.ms += ms;
    this.mono += ms;
  }

  set(ms: number): void {
    this.ms = ms;
  }

  /** How many timers are armed (a test can check that something was scheduled at all). */
  get pending(): number {
    return this.queue.size;
  }

  /**
   * Moves time on by `ms`, running every timer due on the way in time order, each at its own time, and
   * waits for what each returned (a flush, a poll) before moving on; then lets the event loop turn so
   * the work those started settles.
   */
  async tick(ms: number): Promise<void> {
    const end = this.mono + ms;
    for (;;) {
      const next = [...this.queue].filter((s) => s.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.advance(next.at - this.mono);
      if (next.every !== undefined) next.at += next.every;
      else this.queue.delete(next);
      await next.fn();
      await turn();
    }
    this.advance(end - this.mono);
    await turn();
  }
}

/** Real time, but strictly increasing: records made back to back never share a created_at. */
export function monotonicClock(): Clock {
  let last = 0;
  return { now: () => (last = Math.max(Date.now(), last + 1)) };
}

export const RFC3339_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
