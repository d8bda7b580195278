/** Runs the built `keyward` CLI (dist/src/cli/main.js) as its own process. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './app.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (undefined when it is not JSON). */
  json: any;
}

export function cli(args: string[], options: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [path.join(ROOT, 'dist/src/cli/main.js'), ...args], {
      env: { PATH: process.env.PATH ?? '', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`keyward ${args.join(' ')} did not finish: ${stderr}`));
    }, options.timeoutMs ?? 15_000);
    proc.once('error', reject);
    proc.once('close', (code) => {
      clearTimeout(timer);
      let json: any;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
    proc.stdin.on('error', () => { /* the CLI may exit before reading stdin */ });
    proc.stdin.end(options.input ?? '');
  });
}
