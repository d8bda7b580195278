/**
 * Writes accumulated in memory and flushed to the store in the background
 * (usage counters, audit records): at most one flush at a time, one a
 * second while there is something to write, and a failed batch handed back to
 * be retried on the next one. Never a store write per request. The timer is
 * the injected one (clock.ts), so tests move it instead of waiting a second.
 */
import { systemTimers, type Timers } from '../clock.js';

export interface FlushTarget<B> {
  /** Takes what has accumulated (and resets it), or undefined when there is nothing. */
  take(): B | undefined;
  write(batch: B): Promise<void>;
  /** Puts a batch that failed to write back in front of what accumulated since. */
  restore(batch: B, err: unknown): void;
}

export class BackgroundFlush<B> {
  /** Cancels the armed flush (undefined: none armed). */
  private timer: (() => void) | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly target: FlushTarget<B>, private readonly everyMs = 1000, private readonly timers: Timers = systemTimers) {}

  /** Arms the next flush unless one is already due. */
  schedule(): void {
    // After close() nothing re-arms: a batch that failed at shutdown is not retried against a closed store forever.
    if (this.timer || this.closed) return;
    this.timer = this.timers.after(this.everyMs, () => {
      this.timer = undefined;
      return this.flush();
    });
  }

  async flush(): Promise<void> {
    await this.flushOnce();
  }

  /** One batch: 'written', 'failed' (handed back, retried later) or 'empty'. */
  private async flushOnce(): Promise<'written' | 'failed' | 'empty'> {
    while (this.flushing) await this.flushing;
    const batch = this.target.take();
    if (batch === undefined) return 'empty';
    let outcome: 'written' | 'failed' = 'written';
    this.flushing = this.target.write(batch).catch((err) => {
      outcome = 'failed';
      this.target.restore(batch, err);
      this.schedule();
    });
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
    return outcome;
  }

  /**
   * The last flush: batch after batch until nothing is left (a batch that had failed and was handed back goes
   * first, and what accumulated behind it must not be left unwritten), or one fails again (not retried forever).
   */
  async close(): Promise<void> {
    this.closed = true;
    this.timer?.();
    this.timer = undefined;
    while ((await this.flushOnce()) === 'written');
  }
}
