/**
 * The operators' web console (`/console`): the files `npm run build` wrote to dist/console/
 * (scripts/build-console.mjs), read once at start into memory and served as they are.
 *
 * Promises: GET only (the routes are HttpServer's GET-only extra routes); a fixed list of URLs
 * known at start, each mapped to one file, so no request path ever reaches the file system (no
 * directory traversal, no listing); a strong ETag per file answered 304 on If-None-Match; hashed
 * assets cached for a year, the page itself revalidated every time; every response carries a
 * strict Content-Security-Policy (no inline script or style, nothing from another host, no
 * framing) and the usual hardening headers. The console talks to the same admin API as everyone.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import { sendError } from './reply.js';

export const CONSOLE_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'",
].join('; ');

/** Sent with every console response (the page and its assets). */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': CONSOLE_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
});

/** The only kinds of file served; anything else in the folder is ignored. */
const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** `console.3f9a1c2b.js`: its name changes with its content, so it may be cached for good. */
const HASHED = /\.[0-9A-Za-z]{8,}\.(js|css|png|svg)$/;
/** Far more than the console needs; a folder holding more is not the build's. */
const MAX_FILES = 64;
const MAX_BYTES = 8 * 1024 * 1024;

interface Asset {
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, string>>;
  readonly etag: string;
}

type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** dist/console beside the compiled server (dist/src/http → dist/console; from src/ under tsx, too). */
export function defaultConsoleDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const inDist = here.split(path.sep).includes('dist');
  return inDist ? path.resolve(here, '..', '..', 'console') : path.resolve(here, '..', '..', 'dist', 'console');
}

function load(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  let total = 0;
  for (const name of readdirSync(dir).sort()) {
    const type = TYPES[path.extname(name)];
    if (!type || !FILE_NAME.test(name)) continue;
    const full = path.join(dir, name);
    if (!statSync(full).isFile()) continue;
    const body = readFileSync(full);
    total += body.length;
    if (assets.size >= MAX_FILES || total > MAX_BYTES) throw new Error(`${dir} holds more than the console build writes`);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    assets.set(name, {
      body,
      etag,
      headers: Object.freeze({
        ...CONSOLE_HEADERS,
        'content-type': type,
        'content-length': String(body.length),
        etag,
        'cache-control': HASHED.test(name) ? 'public, max-age=31536000, immutable' : 'no-cache',
      }),
    });
  }
  return assets;
}

function serve(asset: Asset): RouteHandler {
  return (req, res) => {
    const match = req.headers['if-none-match'];
    if (match !== undefined && match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === asset.etag)) {
      const { 'content-length': _length, ...headers } = asset.headers;
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, asset.headers);
    res.end(asset.body);
  };
}

/**
 * The console's GET routes, by exact path: `/console`, `/console/` and `/console/oauth-callback` (the page) and
 * `/console/<file>` for each built file. Without a build, `/console` answers 404 saying so.
 */
export function consoleRoutes(log: Logger, dir: string = defaultConsoleDir()): Record<string, RouteHandler> {
  let assets: Map<string, Asset>;
  try {
    assets = load(dir);
  } catch (err) {
    assets = new Map();
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ err, dir }, 'the console assets could not be read');
  }
  const index = assets.get('index.html');
  if (!index) {
    log.warn({ dir }, 'the console is not built (npm run build writes dist/console/); /console answers 404');
    const missing: RouteHandler = (_req, res) => sendError(res, Errors.notFound('The console is not built on this gateway (npm run build writes dist/console/).'));
    return { '/console': missing, '/console/': missing };
  }
  // `/console/oauth-callback`: where a SaaS sends the browser back when an upstream OAuth credential is connected (the page completes it).
  const routes: Record<string, RouteHandler> = { '/console': serve(index), '/console/': serve(index), '/console/oauth-callback': serve(index) };
  for (const [name, asset] of assets) routes[`/console/${name}`] = serve(asset);
  return routes;
}
