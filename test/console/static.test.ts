/**
 * The console's files over HTTP (no browser): /console and each built file answer with the strict
 * CSP and hardening headers, a strong ETag (304 on If-None-Match), long caching only for hashed
 * names; anything else under /console (other files, traversal forms, other methods) is 404 and never
 * touches the file system; the page has no inline script or style and loads nothing from another
 * host. GET /v1/providers gives every loaded provider's credential fields, behind the org token.
 */
import test from 'ava';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { CONSOLE_CSP, consoleRoutes } from '../../src/http/console-assets.js';
import { createLogger } from '../../src/log.js';
import { api, createOrg, startApp, tempDir } from '../support/app.js';

/** A GET of `rawPath` exactly as written (not request() or fetch: a URL would normalise `..` and `.` away first). */
function rawGet(port: number, rawPath: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: rawPath, method }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const EXPECTED_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

function hardened(t: import('ava').ExecutionContext, res: Response): void {
  t.is(res.headers.get('content-security-policy'), EXPECTED_CSP);
  t.is(res.headers.get('x-frame-options'), 'DENY');
  t.is(res.headers.get('x-content-type-options'), 'nosniff');
  t.is(res.headers.get('referrer-policy'), 'no-referrer');
}

test('the page and its two assets are served with the strict CSP, ETags and the right caching', async (t) => {
  t.is(CONSOLE_CSP, EXPECTED_CSP);
  const app = await startApp(t);
  const page = await fetch(`${app.url}/console`);
  t.is(page.status, 200);
  t.is(page.headers.get('content-type'), 'text/html; charset=utf-8');
  t.is(page.headers.get('cache-control'), 'no-cache');
  hardened(t, page);
  const html = await page.text();
  t.is((await (await fetch(`${app.url}/console/`)).text()), html);

  // Exactly one script and one stylesheet, both this gateway's own files; nothing inline.
  const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
  t.is(scripts.length, 1);
  const js = /src="\/console\/(console\.[0-9A-Za-z]+\.js)"/.exec(scripts[0]!)?.[1];
  const css = /<link rel="stylesheet" href="\/console\/(styles\.[0-9A-Za-z]+\.css)">/.exec(html)?.[1];
  t.truthy(js);
  t.truthy(css);
  t.notRegex(html, /<script\b[^>]*>[^<\s]/, 'no inline script');
  t.notRegex(html, /\sstyle=|<style\b|\son[a-z]+=/i, 'no inline style or handler');
  t.notRegex(html, /(src|href)="(https?:)?\/\//, 'nothing from another host');

  for (const [file, type] of [[js!, 'text/javascript; charset=utf-8'], [css!, 'text/css; charset=utf-8']] as const) {
    const res = await fetch(`${app.url}/console/${file}`);
    t.is(res.status, 200, file);
    t.is(res.headers.get('content-type'), type);
    t.is(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    hardened(t, res);
    const body = await res.arrayBuffer();
    t.is(Number(res.headers.get('content-length')), body.byteLength);
    const etag = res.headers.get('etag')!;
    t.regex(etag, /^"[A-Za-z0-9_-]{27}"$/);
    const again = await fetch(`${app.url}/console/${file}`, { headers: { 'if-none-match': etag } });
    t.is(again.status, 304);
    t.is((await again.arrayBuffer()).byteLength, 0);
    t.is((await fetch(`${app.url}/console/${file}`, { headers: { 'if-none-match': '"other"' } })).status, 200);
  }
  const bundle = await (await fetch(`${app.url}/console/${js}`)).text();
  // The trust-policy form suggests the default OIDC issuers (KEYWARD_OIDC_ISSUERS) as text; they are never fetched
  // (the browser tests refuse and record any request to another host).
  const issuers = /https:\/\/(token\.actions\.githubusercontent\.com|accounts\.google\.com|gitlab\.com)(?=['"])/g;
  t.false(/https?:\/\/(?!127\.0\.0\.1|localhost|www\.w3\.org)[a-z]/i.test(bundle.replace(/http:\/\/www\.w3\.org\/[^"']*/g, '').replace(issuers, '')), 'the bundle names no other host');
});

test('only the built files are served: other paths, traversal forms and other methods are 404', async (t) => {
  const app = await startApp(t);
  const js = /src="\/console\/([^"]+)"/.exec(await (await fetch(`${app.url}/console`)).text())![1]!;
  for (const p of [
    '/console/missing.js', '/console/../package.json', '/console/%2e%2e/package.json', '/console/..%2fpackage.json',
    '/console//index.html', '/console/index.html/', `/console/${js}/x`, '/console/.', '/consolex', '/console%2f', '/console/src/main.tsx',
  ]) {
    const res = await rawGet(app.port, p);
    t.is(res.status, 404, p);
    t.is(JSON.parse(res.body).error.code, 'not_found', p);
  }
  for (const method of ['POST', 'PUT', 'DELETE', 'HEAD']) t.is((await rawGet(app.port, '/console', method)).status, 404, method);
});

test('a folder without a build answers 404 saying so; stray files beside the build are not served', async (t) => {
  const log = createLogger('error');
  const empty = consoleRoutes(log, path.join(tempDir(t), 'nothing-here'));
  t.deepEqual(Object.keys(empty).sort(), ['/console', '/console/']);

  const dir = tempDir(t);
  mkdirSync(path.join(dir, 'sub'));
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>x</title>');
  writeFileSync(path.join(dir, 'app.0123abcd.js'), 'export {}');
  writeFileSync(path.join(dir, 'secrets.json'), '{}');
  writeFileSync(path.join(dir, '.env'), 'X=1');
  writeFileSync(path.join(dir, 'sub', 'x.js'), '');
  t.deepEqual(Object.keys(consoleRoutes(log, dir)).sort(), ['/console', '/console/', '/console/app.0123abcd.js', '/console/index.html', '/console/oauth-callback']);
});

test('GET /v1/providers lists every provider with its credential fields, and needs the org token', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  t.is((await api(app, 'GET', '/v1/providers')).status, 401);
  const res = await api(app, 'GET', '/v1/providers', { token: org.token });
  t.is(res.status, 200);
  t.is(res.body.object, 'list');
  t.false(res.body.has_more);
  const ids = res.body.data.map((p: { id: string }) => p.id);
  t.deepEqual(ids, [...ids].sort());
  for (const id of ['openai', 'anthropic', 'gemini', 'bedrock', 'vertex', 'azure']) t.true(ids.includes(id), id);
  const byId = Object.fromEntries(res.body.data.map((p: { id: string }) => [p.id, p]));
  t.is(byId.openai.name, 'OpenAI');
  const openaiKey = byId.openai.credential_fields.find((f: { name: string }) => f.name === 'api_key');
  t.like(openaiKey, { secret: true, optional: false });
  const bedrock = Object.fromEntries(byId.bedrock.credential_fields.map((f: { name: string }) => [f.name, f]));
  t.deepEqual(Object.keys(bedrock), ['region', 'aws_access_key_id', 'aws_secret_access_key', 'aws_session_token', 'api_key', 'role_arn', 'federated']);
  t.like(bedrock.region, { secret: false, optional: false, description: 'AWS region, e.g. us-east-1' });
  t.true(new RegExp(bedrock.region.pattern).test('eu-west-1'));
  t.false(new RegExp(bedrock.region.pattern).test('eu west 1'));
  const vertex = byId.vertex.credential_fields.map((f: { name: string; secret: boolean }) => `${f.name}:${f.secret}`);
  t.deepEqual(vertex, ['service_account:true', 'project:false', 'location:false', 'ambient:false', 'workload_identity_provider:false', 'federated:false']);
  // What the forms are built from is what the create body takes: every required field of each provider, named.
  for (const p of res.body.data) {
    for (const f of p.credential_fields) {
      t.is(typeof f.rule, 'string');
      t.true(f.max_length >= 1);
    }
  }
});
