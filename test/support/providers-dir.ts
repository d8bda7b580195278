/**
 * A providers folder for one test: the package's built providers (with their price files) plus the named
 * example provider files of test/support/providers/ (plain ESM), and any extra
 * sources given inline (file name → source). (Requests to the gateway: test/support/request.ts.)
 */
import type { ExecutionContext } from 'ava';
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, tempDir } from './app.js';

export const EXAMPLE_PROVIDERS = path.join(ROOT, 'test/support/providers');
const BUILT_PROVIDERS = path.join(ROOT, 'dist/providers');

export function providersDir(t: ExecutionContext, examples: string[], extra: Record<string, string> = {}): string {
  const dir = tempDir(t, 'keyward-providers-');
  for (const f of readdirSync(BUILT_PROVIDERS).filter((f) => f.endsWith('.js') || f.endsWith('.prices.json'))) copyFileSync(path.join(BUILT_PROVIDERS, f), path.join(dir, f));
  for (const name of examples) copyFileSync(path.join(EXAMPLE_PROVIDERS, `${name}.js`), path.join(dir, `${name}.js`));
  for (const [name, source] of Object.entries(extra)) writeFileSync(path.join(dir, name), source);
  return dir;
}
