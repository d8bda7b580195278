/**
 * A providers folder for one test (KEYWARD_PROVIDERS_DIR, which adds to the built-in providers): the named
 * example provider files of test/support/providers/ (plain ESM), and any extra sources given inline (file
 * name → source).
 */
import type { ExecutionContext } from 'ava';
import { copyFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { ROOT, tempDir } from './app.js';

export const EXAMPLE_PROVIDERS = path.join(ROOT, 'test/support/providers');

export function providersDir(t: ExecutionContext, examples: string[], extra: Record<string, string> = {}): string {
  const dir = tempDir(t, 'keyward-providers-');
  for (const name of examples) copyFileSync(path.join(EXAMPLE_PROVIDERS, `${name}.js`), path.join(dir, `${name}.js`));
  for (const [name, source] of Object.entries(extra)) writeFileSync(path.join(dir, name), source);
  return dir;
}
