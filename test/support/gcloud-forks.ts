/**
 * Test support: the installed gcloud, started once and forked for each command (test/support/gcloud-forks.py).
 * A gcloud start costs most of a second of CPU before it parses anything (importing the SDK, building the command
 * tree), the same for every command; the docs tests run close to a hundred. Here the SDK's own entry point is loaded
 * once by a server, and the `gcloud` on the returned PATH hands each command (argv, environment, working directory,
 * stdin) to a fresh fork of it: gcloud's parsing and command code, a tenth of the CPU. test/docs/cloud-cli.test.ts
 * checks on every run that a sample of commands answers the same through it as through gcloud itself.
 */
import type { ExecutionContext } from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT } from './app.js';

const SCRIPT = path.join(ROOT, 'test/support/gcloud-forks.py');

/** Modules the docs' commands load (Cloud Run's flags and changes), imported by the server ahead of any fork. */
const AHEAD = ['googlecloudsdk.command_lib.run.flags', 'googlecloudsdk.command_lib.run.config_changes', 'googlecloudsdk.api_lib.run.global_methods'];

export interface GcloudForks {
  /** A folder whose `gcloud` runs each command in a fork of the server: put it first on PATH. */
  bin: string;
  /** Variables a command's environment must carry for that `gcloud` to reach the server. */
  env: Record<string, string>;
}

/** The SDK's root and the Python its `gcloud` script would choose (its bundled one when present), or undefined. */
function installation(gcloud: string): { lib: string; python: string } | undefined {
  const found = spawnSync('/bin/sh', ['-c', `command -v "${gcloud}"`], { encoding: 'utf8' }).stdout.trim();
  if (!found) return undefined;
  const root = path.dirname(path.dirname(realpathSync(found)));
  const lib = path.join(root, 'lib');
  if (!existsSync(path.join(lib, 'gcloud.py'))) return undefined;
  const bundled = path.join(root, 'platform/bundledpythonunix/bin/python3');
  return { lib, python: existsSync(bundled) && process.arch === 'x64' ? bundled : 'python3' };
}

/** Starts the server for the installed gcloud (`gcloud`: its name or path); undefined when there is none to load. */
export async function startGcloudForks(t: ExecutionContext, gcloud: string): Promise<GcloudForks | undefined> {
  const sdk = installation(gcloud);
  if (!sdk) return undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'keyward-gcloud-forks-'));
  const socket = path.join(dir, 'gcloud.sock');
  const bin = path.join(dir, 'bin');
  const home = path.join(dir, 'home');
  mkdirSync(bin);
  mkdirSync(home);
  writeFileSync(path.join(bin, 'gcloud'), `#!/bin/sh\nexec '${sdk.python}' -S -W ignore '${SCRIPT}' client "$@"\n`, { mode: 0o755 });
  const server = spawn(sdk.python, ['-S', '-W', 'ignore', SCRIPT, 'server', sdk.lib, socket, ...AHEAD], {
    // Its own folders: what it reads at start is never a command's (each command reads its own again).
    env: { PATH: process.env.PATH ?? '', HOME: home, CLOUDSDK_CONFIG: path.join(home, 'gcloud'), CLOUDSDK_CORE_DISABLE_PROMPTS: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  let errors = '';
  server.stderr.on('data', (d) => (errors += d));
  await new Promise<void>((resolve, reject) => {
    server.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve();
    });
    server.once('exit', (code) => reject(new Error(`the gcloud fork server exited (${code}): ${errors.slice(0, 500)}`)));
  });
  return { bin, env: { KEYWARD_GCLOUD_FORKS: socket } };
}
