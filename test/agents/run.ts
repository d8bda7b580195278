/**
 * Runs an installed agent or client the way test/agents/ does: stdin closed (no TTY, no prompt can be answered), its
 * own environment, and a time limit after which it is killed, so a hang fails a test and never passes one.
 */
import { spawn } from 'node:child_process';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an agent to its end (stdin closed), at most `limitMs` (then killed: a hang fails the test, it never passes it). */
export function run(file: string, args: string[], env: Record<string, string>, cwd: string, limitMs = 180_000): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
