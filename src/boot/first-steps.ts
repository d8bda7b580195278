/**
 * What a server just started tells its operator after the `listening` line: where the console is, and, while the
 * store holds no organisation, the one command that makes one (it prints the org token the console signs in with).
 * Notices only: a store that cannot be read now is /readyz's to report, so the question is then left unasked.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../log.js';
import type { OrgStore } from '../store/ports.js';

/** Where a browser on this machine finds the console: a wildcard bind is reached on loopback. */
export function consoleUrl(address: string, port: number, tls: boolean): string {
  const host = address === '0.0.0.0' ? '127.0.0.1' : address === '::' ? '[::1]' : address.includes(':') ? `[${address}]` : address;
  return `${tls ? 'https' : 'http'}://${host}:${port}/console/`;
}

/**
 * The command that makes an organisation, as this server was started: through npm (`npm start` in a clone), the
 * package's bin; else (the image runs `node dist/src/main.js`) the CLI's entry beside this file, from the working folder.
 */
export function orgCreateCommand(env: NodeJS.ProcessEnv, cwd: string): string {
  if (env.npm_lifecycle_event !== undefined) return 'npx keyward org create <name>';
  const cli = path.relative(cwd, path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'cli', 'main.js'));
  return `node ${cli} org create <name>`;
}

export function logConsoleUrl(log: Logger, url: string): void {
  log.info({ url }, `console: ${url}`);
}

/** Logs how to make the first organisation when there is none yet. */
export async function logFirstOrgCommand(log: Logger, orgs: Pick<OrgStore, 'listOrgs'>, env: NodeJS.ProcessEnv, cwd: string): Promise<void> {
  let page;
  try {
    page = await orgs.listOrgs({ limit: 1 });
  } catch {
    return;
  }
  if (typeof page !== 'object' || page.data.length > 0) return;
  const command = orgCreateCommand(env, cwd);
  log.info({ command }, `no organisation yet: make one with \`${command}\`; it prints the org token (otok_…) the console signs in with`);
}
