#!/usr/bin/env node
/**
 * Builds the operators' console (console/) into dist/console/: one minified JS bundle (Preact and
 * the pages, from console/src/main.tsx) and one stylesheet, each named by a hash of its content,
 * and index.html pointing at them. esbuild only: no other bundler, no network. Run by
 * `npm run build` after tsc; the gateway serves the folder at /console (src/http/console-assets.ts).
 */
import { build } from 'esbuild';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const source = path.join(root, 'console');
const out = path.join(root, 'dist', 'console');

// The last build's files go (their names change with their content); folders stay: dist/console/src/ is the
// console's modules as the typecheck's tsc pass compiled them for the tests (test/console/ imports them).
mkdirSync(out, { recursive: true });
for (const entry of readdirSync(out, { withFileTypes: true })) if (!entry.isDirectory()) rmSync(path.join(out, entry.name));

const result = await build({
  entryPoints: { console: path.join(source, 'src', 'main.tsx'), styles: path.join(source, 'styles.css') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: path.join(source, 'tsconfig.json'),
  outdir: out,
  entryNames: '[name].[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
});

const outputs = Object.keys(result.metafile.outputs).map((f) => path.basename(f));
const js = outputs.find((f) => /^console\.[^.]+\.js$/.test(f));
const css = outputs.find((f) => /^styles\.[^.]+\.css$/.test(f));
if (!js || !css) throw new Error(`console build: expected one JS and one CSS output, got ${outputs.join(', ')}`);
const html = readFileSync(path.join(source, 'index.html'), 'utf8').replace('%JS%', js).replace('%CSS%', css);
writeFileSync(path.join(out, 'index.html'), html);
const size = (f) => readFileSync(path.join(out, f)).length;
console.log(`console: dist/console/index.html, ${js} (${size(js)} bytes), ${css} (${size(css)} bytes)`);
