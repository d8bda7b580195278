/**
 * `node:http`, loaded with `require` rather than `import`. Why: the first ES-module import of node:http builds
 * its ESM facade, which reads every export, and its `WebSocket`, `CloseEvent` and `MessageEvent` getters load
 * undici then: 25–35 ms of a cold start for classes Keyward never uses. Import the module's values from here,
 * its types from `node:http` (`import type` is erased).
 */
import { createRequire } from 'node:module';

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export default http;
