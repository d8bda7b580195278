/**
 * The server, as the entry point (main.ts) starts it: read the config, build the
 * container, listen, and shut down gracefully on SIGTERM/SIGINT (exit 0 after
 * draining; a second signal during the drain does not cut it short, only SIGKILL does).
 */
import { loadConfig, ConfigError } from '../settings/config.js';
import { writeSync } from 'node:fs';
import { createLogger, deferUntilListening } from '../log.js';
import { consoleUrl, logConsoleUrl, logFirstOrgCommand } from './first-steps.js';
import type { Store } from '../store/ports.js';
import { Symbols } from '../symbols.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`keyward: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const real = createLogger(config.logLevel);
  const { log, release } = deferUntilListening(real);
  let server;
  try {
    // Loaded only now, with the settings read: a bad variable stops the start before some 800 modules are compiled.
    const { buildServer } = await import('./container.js');
    server = await buildServer(config, log);
  } catch (err) {
    release();
    // Settings checked once the providers are loaded (KEYWARD_PRICES) fail like the rest of the configuration.
    if (err instanceof ConfigError) {
      process.stderr.write(`keyward: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    log.error({ err }, 'start-up failed');
    process.stderr.write(`keyward: start-up failed: ${(err as Error).message}\n`);
    process.exit(1);
  }
  let address;
  try {
    address = await server.http.listen();
  } catch (err) {
    // A host that does not resolve or is not ours, a port in use or privileged: one line naming the variable, exit 1.
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    const line = err instanceof ConfigError ? err.message : code === 'EADDRINUSE' || code === 'EACCES'
      ? `PORT: cannot listen on port ${config.port} (${code})`
      : `HOST: cannot listen on ${config.host} (${code})`;
    release();
    log.error({ err }, 'start-up failed');
    process.stderr.write(`keyward: start-up failed: ${line}\n`);
    process.exit(1);
  }

  // One drain, whatever arrives during it: a second SIGTERM or SIGINT (npm, `docker stop` wrappers and people
  // send two) is logged and ignored, never the default action that would exit at once with spans and usage
  // unflushed. SIGKILL is the only way to skip the drain.
  let draining = false;
  const stop = (signal: string) => {
    if (draining) {
      log.warn({ signal, inflight: server.http.inflightRequests }, 'already draining: this signal is ignored (SIGKILL skips the drain)');
      return;
    }
    draining = true;
    log.info({ signal, inflight: server.http.inflightRequests }, 'shutting down');
    server.shutdown().then(
      () => {
        log.info({}, 'stopped');
        process.exit(0);
      },
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // Only now: whoever waits for this line may signal at once, and the handlers must already be there.
  // It is written whatever KEYWARD_LOG_LEVEL says: operators and scripts wait for it.
  const listening = { address: address.address, port: address.port };
  if (real.isLevelEnabled('info')) real.info(listening, 'listening');
  else writeSync(1, JSON.stringify({ severity: 'INFO', time: new Date().toISOString(), ...listening, message: 'listening' }) + '\n');
  // Then the first steps: where the console is at once, and (after the start-up notices) how to make an organisation.
  logConsoleUrl(real, consoleUrl(address.address, address.port, config.tls !== undefined));
  release();
  await logFirstOrgCommand(log, server.container.resolve<Store>(Symbols.Store), process.env, process.cwd());
}

process.on('uncaughtException', (err) => {
  // A bug must not take every in-flight stream down with it; it is logged (name and message only).
  process.stdout.write(JSON.stringify({ severity: 'ERROR', message: 'uncaught exception', time: new Date().toISOString(), err: { name: err.name, message: err.message } }) + '\n');
});
process.on('unhandledRejection', (reason) => {
  process.stdout.write(JSON.stringify({ severity: 'ERROR', message: 'unhandled rejection', time: new Date().toISOString(), err: { message: reason instanceof Error ? reason.message : 'non-error rejection' } }) + '\n');
});

void main();
