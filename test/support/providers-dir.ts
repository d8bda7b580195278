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

export interface Sent {
  status: number;
  statusMessage: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  text: string;
  body: any;
}

/**
 * One request through node:http. `chunked`: the body goes without content-length, in pieces of
 * that many bytes (transfer-encoding: chunked).
 */
export function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string; chunked?: number } = {}): Promise<Sent> {
  const body = options.body ?? '';
  const framing: Record<string, string> = options.chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'POST', agent: false, headers: { 'content-type': 'application/json', ...framing, ...options.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let parsed: any;
        try {
          parsed = JSON.parse(text);
        } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, statusMessage: res.statusMessage ?? '', headers: res.headers, rawHeaders: res.rawHeaders, text, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (options.chunked) {
      for (let i = 0; i < body.length; i += options.chunked) req.write(body.slice(i, i + options.chunked));
      req.end();
    } else {
      req.end(body);
    }
  });
}
