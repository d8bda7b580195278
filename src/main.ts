/**
 * The server's entry point (`npm start`, the image's CMD): switches on Node's on-disk compile cache, then
 * loads the server (serve.ts). Why: most of a cold start is Node compiling some 300 modules; with the cache a
 * start after the first reuses their bytecode (checked against each file's content and Node's version, so a
 * changed build or Node is compiled afresh). The cache is NODE_COMPILE_CACHE's folder when set (the image
 * fills one at build time), else Node's default under the system's temporary folder;
 * NODE_DISABLE_COMPILE_CACHE=1 switches it off. A cache that cannot be written is skipped silently by Node.
 */
import { enableCompileCache } from 'node:module';

enableCompileCache();
await import('./boot/serve.js');
