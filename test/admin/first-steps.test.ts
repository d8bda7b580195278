/**
 * The built server's first log lines on an empty data directory: after the contract's `listening` line, where
 * the console is (a loopback URL that serves it) and, while no organisation exists, the one command that makes
 * one, which, run as printed, makes the organisation; started again, the server no longer asks. Through npm the
 * command is the package's bin (`npx keyward …`). The URL shown for a wildcard bind is loopback.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { consoleUrl, orgCreateCommand } from '../../src/boot/first-steps.js';
import { ROOT, spawnServer, tempDir, type SpawnedServer } from '../support/app.js';
import { eventually } from '../support/wait.js';

const KEK = randomBytes(32).toString('base64');
const START_TIMEOUT_MS = 60_000;

const parsed = (server: SpawnedServer) => server.lines.filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

/** Runs `command` (as the log printed it, `<name>` filled in) in the repository, as an operator would. */
function runPrinted(command: string, name: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string }> {
  const [program, ...args] = command.replace('<name>', name).split(' ');
  return new Promise((resolve, reject) => {
    const proc = spawn(program === 'node' ? process.execPath : program!, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.once('error', reject);
    proc.once('close', (code) => resolve({ code, stdout }));
  });
}

test('on an empty data directory: listening, then the console URL, then the command that makes an organisation', async (t) => {
  const env = { KEYWARD_DATA_DIR: tempDir(t), KEYWARD_LOCAL_KEK: KEK };
  const server = await spawnServer(t, env, START_TIMEOUT_MS);
  await eventually(() => parsed(server).some((o) => typeof o.command === 'string'), 'the organisation notice');
  const lines = parsed(server);
  t.is(lines[0]!.message, 'listening', 'the contract\'s first line stays first');
  const url = `http://127.0.0.1:${server.port}/console/`;
  t.like(lines[1], { severity: 'INFO', message: `console: ${url}`, url }, 'the console right after');
  const notice = lines.find((o) => typeof o.command === 'string')!;
  t.is(notice.severity, 'INFO');
  t.is(notice.command, 'node dist/src/cli/main.js org create <name>', 'started with node (as the image is): the CLI beside the server');
  t.regex(notice.message as string, /^no organisation yet: make one with `node dist\/src\/cli\/main\.js org create <name>`; it prints the org token \(otok_…\)/);
  const page = await fetch(url);
  t.is(page.status, 200, 'the URL shown serves the console');
  t.regex(await page.text(), /<html/i);

  // Run as printed (the running server's store, as an operator would): it makes the organisation.
  const made = await runPrinted(notice.command as string, 'first-co', env);
  t.is(made.code, 0);
  t.regex(made.stdout, /token:\s+otok_/);
  t.is(await server.kill('SIGTERM'), 0);

  const again = await spawnServer(t, env, START_TIMEOUT_MS);
  await eventually(() => parsed(again).some((o) => typeof o.url === 'string'), 'the console line');
  // The notice would follow the console line within a store read: wait for the drain's lines to be sure none came.
  t.is(await again.kill('SIGTERM'), 0);
  t.false(parsed(again).some((o) => 'command' in o), 'an organisation exists: no notice');
  t.true(parsed(again).some((o) => o.message === 'stopped'));
});

test('started through npm (npm start), the command is the package\'s bin', async (t) => {
  const server = await spawnServer(t, { KEYWARD_DATA_DIR: tempDir(t), KEYWARD_LOCAL_KEK: KEK, npm_lifecycle_event: 'start' }, START_TIMEOUT_MS);
  await eventually(() => parsed(server).some((o) => typeof o.command === 'string'), 'the organisation notice');
  t.is(parsed(server).find((o) => typeof o.command === 'string')!.command, 'npx keyward org create <name>');
  t.is(await server.kill('SIGTERM'), 0);
});

test('the console URL: a wildcard bind is shown on loopback, an IPv6 address in brackets, TLS as https', (t) => {
  t.is(consoleUrl('0.0.0.0', 8080, false), 'http://127.0.0.1:8080/console/');
  t.is(consoleUrl('::', 8080, false), 'http://[::1]:8080/console/');
  t.is(consoleUrl('::1', 443, true), 'https://[::1]:443/console/');
  t.is(consoleUrl('10.0.0.5', 3000, false), 'http://10.0.0.5:3000/console/');
  // The CLI beside first-steps.js, from the repository: src/cli/main.js from source, dist/src/cli/main.js compiled.
  const beside = path.relative(ROOT, fileURLToPath(new URL('../../src/cli/main.js', import.meta.url)));
  t.regex(beside, /^(dist\/)?src\/cli\/main\.js$/);
  t.is(orgCreateCommand({}, ROOT), `node ${beside} org create <name>`);
  t.is(orgCreateCommand({ npm_lifecycle_event: 'start' }, ROOT), 'npx keyward org create <name>');
});
