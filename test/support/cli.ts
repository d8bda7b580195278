/** Runs the built `keyward` CLI (dist/src/cli/bin.js, the package's bin) as its own process. */
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
    const proc = spawn(process.execPath, [path.join(ROOT, 'dist/src/cli/bin.js'), ...args], {
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
    }, options.timeoutMs ?? 60_000);
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

/** Runs many command lines, at most `concurrency` at a time (each is a Node process); results in order. */
export async function cliAll(runs: Array<{ args: string[]; env?: Record<string, string>; input?: string }>, concurrency = 4): Promise<CliResult[]> {
  const results: CliResult[] = new Array(runs.length);
  let next = 0;
  const worker = async () => {
    while (next < runs.length) {
      const i = next++;
      const r = runs[i]!;
      results[i] = await cli(r.args, { ...(r.env ? { env: r.env } : {}), ...(r.input !== undefined ? { input: r.input } : {}) });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, runs.length) }, worker));
  return results;
}

/** Runs the CLI's `run()` in this process (the source, no build needed) with captured output. */
export async function cliInProcess(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const [{ run }, { PassThrough, Readable }] = await Promise.all([import('../../src/cli/main.js'), import('node:stream')]);
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (d) => (stdout += d));
  err.on('data', (d) => (stderr += d));
  const code = await run(args, { stdin: Readable.from([]), stdout: out, stderr: err }, { KEYWARD_LOG_LEVEL: 'error', ...env });
  return { code, stdout, stderr };
}
