/**
 * Test support: waiting on events instead of sleeping. `eventually` polls a condition until it holds and
 * fails only after a generous bound (a loaded machine is slow: the bound is for a real event that will
 * come, never a race against a timer the code could take from the injected clock). `quiet` waits until a
 * server has closed every request it took: what runs when a response closes (usage, settlement, the
 * access log) has run by then. `sleep` is the one deliberate pause of real time: pacing what a test sends (a
 * trickled body's gaps, a stream's frames) or a timer in another process that no injected clock reaches; each
 * use says which.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { TestApp } from './app.js';

/**
 * Resolves with how many milliseconds the condition took to hold (a test may log it or bound it). `everyMs`: the
 * pause between checks (5 ms; more where each check is a request to another process, so polling does not load it).
 */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000, everyMs = 5): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await delay(everyMs);
  }
  return Math.round(performance.now() - started);
}

export async function quiet(app: Pick<TestApp, 'server'>, timeoutMs = 20_000): Promise<void> {
  await eventually(() => app.server.http.inflightRequests === 0, 'every request closed', timeoutMs);
}

/** A pause of `ms` real milliseconds (see the header: pacing, or another process's timer; never a wait for an event). */
export function sleep(ms: number): Promise<void> {
  return delay(ms);
}
