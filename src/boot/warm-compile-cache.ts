/**
 * Fills Node's compile cache (NODE_COMPILE_CACHE) for the image at build time (the Dockerfile's runtime
 * stage): loads every module the server loads at start (the container's graph, each built provider and
 * plugin file) without starting anything, then writes the cache. A new instance then starts from bytecode
 * rather than compiling some 300 modules (main.ts). Run with the production node_modules in place.
 */
import { enableCompileCache, flushCompileCache } from 'node:module';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const status = enableCompileCache();
if (!status.directory) throw new Error(`the compile cache is off (${status.message ?? `status ${status.status}`}): set NODE_COMPILE_CACHE to a writable folder`);
await import('./container.js');
for (const folder of ['providers', 'plugins']) {
  for (const file of readdirSync(path.join(dist, folder)).filter((f) => f.endsWith('.js')).sort()) await import(pathToFileURL(path.join(dist, folder, file)).href);
}
flushCompileCache();
process.stdout.write(`compile cache filled in ${status.directory}\n`);
