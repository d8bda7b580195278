/**
 * Test support: every Markdown page of the documentation, `docs/` and its reader folders (`operate/`, `agents/`,
 * `extend/`) at any depth, as repository paths in a stable order. The tests that read "every docs page" take the
 * list from here, so a page added in a new folder is checked like the others.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './app.js';

export function docsPages(): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.md')) found.push(rel);
    }
  };
  walk('docs');
  return found.sort();
}
