/**
 * One JSON line per event on stdout in Cloud Logging's shape (`severity`,
 * `message`, `time`). pino writes synchronously so the last lines before an
 * exit are never lost. Nothing here ever receives a secret: callers log ids.
 */
import { pino } from 'pino';
import type { LogLevel } from './config.js';

export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  isLevelEnabled(level: LogLevel): boolean;
}

const SEVERITY: Record<string, string> = {
  trace: 'DEBUG', debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR', fatal: 'CRITICAL',
};

export function createLogger(level: LogLevel, destination: NodeJS.WritableStream | number = 1): Logger {
  const dest = typeof destination === 'number' ? pino.destination({ dest: destination, sync: true }) : destination;
  return pino(
    {
      level,
      messageKey: 'message',
      base: undefined,
      timestamp: () => `,"time":"${new Date().toISOString()}"`,
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
