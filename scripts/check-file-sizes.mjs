#!/usr/bin/env node
/**
 * House rule: no hand-written source file over 400 lines (src/, plugins/, providers/, console/src/).
 * A file that grows past it is split where its parts have separate reasons to change.
 * Exits 1 listing every file over the limit. Part of `npm test`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const LIMIT = 400;
const ROOTS = ['src', 'plugins', 'providers', 'console/src'];

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* files(full);
    else if (/\.(ts|tsx|mts|js|mjs)$/.test(name)) yield full;
  }
}

const over = [];
for (const root of ROOTS) {
  for (const file of files(root)) {
    const lines = readFileSync(file, 'utf8').split('\n').length - 1;
    if (lines > LIMIT) over.push(`${file}: ${lines} lines`);
  }
}
if (over.length > 0) {
  console.error(`Source files over ${LIMIT} lines (split them):\n  ${over.join('\n  ')}`);
  process.exit(1);
}
console.log(`file sizes: every source file is at most ${LIMIT} lines`);
