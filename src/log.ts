/**
 * One JSON line per event on stdout in Cloud Logging's shape (`severity`,
 * `message`, `time`). Lines are written synchronously, but the lines of one
 * event-loop turn together (TurnBatch): under load one write call carries many
 * request lines instead of one system call each. They go out at the end of
 * the turn, at once past 64 kB, and on exit (`process.on('exit')`, which also
 * runs after an uncaught exception or process.exit), so the last lines before
 * an exit are not lost; only a SIGKILL can drop the current turn's lines.
 * Nothing here ever receives a secret: callers log ids.
 */
import { pino } from 'pino';
import type { LogLevel } from './settings/config.js';

export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  isLevelEnabled(level: LogLevel): boolean;
}

/** The `time` field, made once per millisecond (toISOString per line was ~1 % of a proxied request's CPU). */
let stampMs = -1;
let stamp = '';
function timestamp(): string {
  const now = Date.now();
  if (now !== stampMs) {
    stampMs = now;
    stamp = `,"time":"${new Date(now).toISOString()}"`;
  }
  return stamp;
}

const SEVERITY: Record<string, string> = {
  trace: 'DEBUG', debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR', fatal: 'CRITICAL',
};

/** Pending lines past this many characters are written at once, not at the end of the turn. */
const TURN_BATCH_MAX = 64 * 1024;
const batches = new Set<TurnBatch>();

/** The lines of one event-loop turn, written with one synchronous write (sonic-boom's, which retries EAGAIN). */
class TurnBatch {
  private pending = '';
  private scheduled = false;

  constructor(private readonly out: { write(data: string): boolean }) {
    if (batches.size === 0) process.on('exit', () => {
      for (const b of batches) b.flushSync();
    });
    batches.add(this);
  }

  write(line: string): boolean {
    this.pending += line;
    if (this.pending.length >= TURN_BATCH_MAX) this.flushSync();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.endOfTurn);
    }
    return true;
  }

  private readonly endOfTurn = (): void => {
    this.scheduled = false;
    this.flushSync();
  };

  flushSync(): void {
    if (this.pending === '') return;
    const data = this.pending;
    this.pending = '';
    this.out.write(data);
  }

  /** pino's logger.flush(). */
  flush(cb?: (err?: Error) => void): void {
    this.flushSync();
    cb?.();
  }
}

export function createLogger(level: LogLevel, destination: NodeJS.WritableStream | number = 1): Logger {
  const dest = typeof destination === 'number' ? new TurnBatch(pino.destination({ dest: destination, sync: true })) : destination;
  return pino(
    {
      level,
      messageKey: 'message',
      base: undefined,
      timestamp,
      formatters: { level: (label) => ({ severity: SEVERITY[label] ?? 'DEFAULT' }) },
      // Errors are logged by name and message only: a stack can carry a secret-bearing argument.
      serializers: { err: (e: unknown) => (e instanceof Error ? { name: e.name, message: e.message, code: (e as NodeJS.ErrnoException).code } : { message: String(e) }) },
    },
    dest,
  ) as unknown as Logger;
}

/**
 * Holds log lines made while the server starts until it listens, so the first
 * line after listening is the contract's `listening` line (start-up notices,
 * such as the created-key warning, follow it). Released at once on failure.
 */
export function deferUntilListening(real: Logger): { log: Logger; release(): void } {
  let queue: Array<() => void> | undefined = [];
  const level = (name: 'debug' | 'info' | 'warn' | 'error') => (fields: object, message: string) => {
    if (queue) queue.push(() => real[name](fields, message));
    else real[name](fields, message);
  };
  return {
    log: { debug: level('debug'), info: level('info'), warn: level('warn'), error: level('error'), isLevelEnabled: (l) => real.isLevelEnabled(l) },
    release() {
      const pending = queue ?? [];
      queue = undefined;
      for (const line of pending) line();
    },
  };
}
