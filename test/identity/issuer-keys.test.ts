/**
 * The issuer's keys: loaded once from OIDC discovery and cached; a key rotation at the issuer (a
 * new kid) is picked up without a restart; concurrent exchanges share one JWKS fetch; unknown kids
 * cost the issuer at most one fetch per cool-down; an unreachable issuer is invalid_grant, not a
 * crash. And the fetcher's bounds: https only, size, time, no redirects; the issuers' config.
 */
import test from 'ava';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from '../../src/settings/config.js';
import { fetchJsonObject, OidcFetchError } from '../../src/identity/oidc-fetch.js';
import { COOLDOWN_MS, MAX_AGE_MS, MAX_STALE_MS } from '../../src/identity/issuer-keys.js';
import { newSigningKey } from '../support/oidc-issuer.js';
import { identitySetup } from './_setup.js';

test('a key rotation at the issuer (new kid) is picked up without a restart; the retired key stops working', async (t) => {
  const s = await identitySetup(t);
  await s.policy();
  const oldJwt = await s.issuer.sign(s.clock.now());
  t.is((await s.exchange(oldJwt)).status, 200);
  t.is(s.issuer.jwksRequests, 1);
  t.is((await s.exchange(await s.issuer.sign(s.clock.now()))).status, 200, 'cached: no second fetch');
  t.is(s.issuer.jwksRequests, 1);

  await s.issuer.rotate();
  s.clock.advance(COOLDOWN_MS);
  const newJwt = await s.issuer.sign(s.clock.now());
  const rotated = await s.exchange(newJwt);
  t.is(rotated.status, 200, rotated.text);
  t.is(s.issuer.jwksRequests, 2, 'the unknown kid refreshed the keys once');
  const retired = await s.exchange(await s.issuer.sign(s.clock.now(), {}, { key: { ...s.issuer.current, kid: 'gone', privateKey: (await newSigningKey()).privateKey } }));
  t.is(retired.body.error, 'invalid_grant');
  t.is(s.issuer.jwksRequests, 2, 'within the cool-down an unknown kid fetches nothing');
  t.is((await s.exchange(oldJwt)).body.error, 'invalid_grant', 'the retired key no longer verifies');
});

test('concurrent exchanges share one JWKS fetch; a flood of unknown kids costs one fetch per cool-down', async (t) => {
  const s = await identitySetup(t);
  await s.policy();
  s.issuer.jwksDelayMs = 300;
  const jwts = await Promise.all(Array.from({ length: 25 }, () => s.issuer.sign(s.clock.now())));
  const results = await Promise.all(jwts.map((j) => s.exchange(j)));
  t.deepEqual(results.map((r) => r.status), jwts.map(() => 200));
  t.is(s.issuer.discoveryRequests, 1);
  t.is(s.issuer.jwksRequests, 1);
  t.is(s.issuer.maxJwksInFlight, 1);

  s.clock.advance(COOLDOWN_MS);
  const strangers = await Promise.all(Array.from({ length: 25 }, async () => s.issuer.sign(s.clock.now(), {}, { key: await newSigningKey() })));
  const refused = await Promise.all(strangers.map((j) => s.exchange(j)));
  t.deepEqual(refused.map((r) => r.body.error), strangers.map(() => 'invalid_grant'));
  t.is(s.issuer.jwksRequests, 2, 'one refresh for 25 unknown kids');
  t.is(s.issuer.maxJwksInFlight, 1);

  // Keys older than their maximum age are refreshed once, on the next exchange.
  s.clock.advance(MAX_AGE_MS);
  t.is((await s.exchange(await s.issuer.sign(s.clock.now()))).status, 200);
  t.is(s.issuer.jwksRequests, 3);
});

test('an issuer that cannot be reached: invalid_grant (the JWT never logged), tried again only after the cool-down', async (t) => {
  const s = await identitySetup(t);
  await s.policy();
  const jwt = await s.issuer.sign(s.clock.now());
  s.issuer.down = true;
  const down = await s.exchange(jwt);
  t.is(down.status, 400);
  t.is(down.body.error, 'invalid_grant');
  t.regex(down.body.error_description, /could not be fetched/);
  t.is(s.issuer.discoveryRequests, 1);
  s.issuer.down = false;
  t.is((await s.exchange(jwt)).body.error, 'invalid_grant', 'within the cool-down: not tried again');
  t.is(s.issuer.discoveryRequests, 1);
  s.clock.advance(COOLDOWN_MS);
  t.is((await s.exchange(jwt)).status, 200);
  t.is(s.issuer.discoveryRequests, 2);
  t.false(s.f.app.logText().includes(jwt));
  t.truthy(s.f.app.logs.find((l) => l.message === 'OIDC issuer keys could not be loaded' && l.issuer === s.issuer.url && /status 503/.test(String(l.reason))));
});

test('while the issuer is down, cached keys keep verifying for a while (refreshed each cool-down), then no longer', async (t) => {
  const s = await identitySetup(t);
  await s.policy();
  t.is((await s.exchange(await s.issuer.sign(s.clock.now()))).status, 200);
  s.issuer.down = true;
  s.clock.advance(MAX_AGE_MS);
  t.is((await s.exchange(await s.issuer.sign(s.clock.now()))).status, 200, 'stale keys still verify');
  t.is(s.issuer.discoveryRequests, 2, 'a refresh was tried');
  t.is((await s.exchange(await s.issuer.sign(s.clock.now()))).status, 200);
  t.is(s.issuer.discoveryRequests, 2, 'not again within the cool-down');
  s.clock.advance(MAX_STALE_MS - MAX_AGE_MS);
  const late = await s.exchange(await s.issuer.sign(s.clock.now()));
  t.is(late.body.error, 'invalid_grant');
  t.regex(late.body.error_description, /could not be fetched/);
  s.issuer.down = false;
  s.clock.advance(COOLDOWN_MS);
  t.is((await s.exchange(await s.issuer.sign(s.clock.now()))).status, 200, 'back once the issuer answers');
});

/** A one-route HTTP server on 127.0.0.1 for the fetcher's bounds. */
async function serve(t: import('ava').ExecutionContext, handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// A generous deadline where the server answers (a busy machine is slow); the time bound itself is tried with 300 ms below.
const LIMITS = { allowHttpLoopback: true, maxBytes: 1024, timeoutMs: 60_000 };

test('the fetcher: https only (plain http solely on loopback when allowed), bounded in size and time, no redirects', async (t) => {
  const ok = await serve(t, (_req, res) => res.end('{"issuer":"x"}'));
  t.deepEqual(await fetchJsonObject(ok, LIMITS), { issuer: 'x' });
  await t.throwsAsync(fetchJsonObject(ok, { ...LIMITS, allowHttpLoopback: false }), { instanceOf: OidcFetchError, message: /https only/ });
  await t.throwsAsync(fetchJsonObject('http://example.com/.well-known/openid-configuration', LIMITS), { instanceOf: OidcFetchError, message: /https only/ });
  await t.throwsAsync(fetchJsonObject('file:///etc/passwd', LIMITS), { instanceOf: OidcFetchError });

  const declared = await serve(t, (_req, res) => {
    res.writeHead(200, { 'content-length': '5000' });
    res.end(`"${'x'.repeat(4998)}"`);
  });
  await t.throwsAsync(fetchJsonObject(declared, LIMITS), { instanceOf: OidcFetchError, message: /larger than 1024 bytes/ });
  let written = 0;
  const endless = await serve(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const timer = setInterval(() => {
      written += 512;
      if (!res.write('x'.repeat(512))) return;
    }, 1);
    res.on('close', () => clearInterval(timer));
  });
  await t.throwsAsync(fetchJsonObject(endless, LIMITS), { instanceOf: OidcFetchError, message: /larger than 1024 bytes/ });
  t.true(written < 1024 * 1024, 'stopped reading soon after the limit');

  const hang = await serve(t, () => { /* never answers */ });
  const started = Date.now();
  await t.throwsAsync(fetchJsonObject(hang, { ...LIMITS, timeoutMs: 300 }), { instanceOf: OidcFetchError, message: /no answer in time/ });
  // The 300 ms deadline against a real socket, bounded generously (a busy machine is slow): without it the fetch would
  // wait for LIMITS' 60 s.
  t.true(Date.now() - started < 30_000, `gave up after ${Date.now() - started} ms`);

  let followed = false;
  const target = await serve(t, (_req, res) => {
    followed = true;
    res.end('{}');
  });
  const redirect = await serve(t, (_req, res) => {
    res.writeHead(302, { location: target });
    res.end();
  });
  await t.throwsAsync(fetchJsonObject(redirect, LIMITS), { instanceOf: OidcFetchError, message: /status 302/ });
  t.false(followed);
  const notObject = await serve(t, (_req, res) => res.end('[1,2]'));
  await t.throwsAsync(fetchJsonObject(notObject, LIMITS), { message: /not a JSON object/ });
});

test('a discovery document naming another issuer, or a jwks_uri that is not https, is refused', async (t) => {
  let answer: (self: string) => object = () => ({});
  let self = '';
  self = await serve(t, (_req, res) => res.end(JSON.stringify(answer(self))));
  const s = await identitySetup(t, { KEYWARD_OIDC_ISSUERS: self });
  await s.policy({ issuer: self });
  const jwt = await s.issuer.sign(s.clock.now(), { iss: self });
  const reasons = () => s.f.app.logs.filter((l) => l.message === 'OIDC issuer keys could not be loaded').map((l) => String(l.reason));

  answer = () => ({ issuer: 'https://evil.test', jwks_uri: `${s.issuer.url}/jwks` });
  t.is((await s.exchange(jwt)).body.error, 'invalid_grant');
  t.regex(reasons().at(-1) ?? '', /names another issuer/);
  s.clock.advance(COOLDOWN_MS);
  answer = (me) => ({ issuer: me, jwks_uri: 'http://example.com/jwks' });
  t.is((await s.exchange(jwt)).body.error, 'invalid_grant');
  t.regex(reasons().at(-1) ?? '', /https only/);
  t.is(s.issuer.jwksRequests, 0, 'the real keys were never fetched through a lying document');
  s.clock.advance(COOLDOWN_MS);
  answer = (me) => ({ issuer: me, jwks_uri: `${s.issuer.url}/jwks` });
  t.is((await s.exchange(jwt)).status, 200, 'an honest document: the keys verify');
});

test('KEYWARD_OIDC_ISSUERS: GitHub, Google and GitLab by default; https only unless the loopback test setting; no trailing slash', (t) => {
  const base = { KEYWARD_DATA_DIR: '/tmp/keyward-unused' };
  t.deepEqual(loadConfig(base).oidcIssuers, ['https://token.actions.githubusercontent.com', 'https://accounts.google.com', 'https://gitlab.com']);
  t.false(loadConfig(base).oidcAllowHttpLoopback);
  t.deepEqual(loadConfig({ ...base, KEYWARD_OIDC_ISSUERS: 'none' }).oidcIssuers, []);
  t.deepEqual(loadConfig({ ...base, KEYWARD_OIDC_ISSUERS: ' https://a.example , https://b.example/tenant ' }).oidcIssuers, ['https://a.example', 'https://b.example/tenant']);
  for (const bad of ['http://a.example', 'https://a.example/', 'https://user:pw@a.example', 'https://a.example?x=1', 'not a url', 'http://127.0.0.1:9000']) {
    const err = t.throws(() => loadConfig({ ...base, KEYWARD_OIDC_ISSUERS: bad }), { instanceOf: ConfigError });
    t.regex(err!.message, /^KEYWARD_OIDC_ISSUERS:/);
    t.false(err!.message.includes('pw@'));
  }
  t.deepEqual(loadConfig({ ...base, KEYWARD_OIDC_ISSUERS: 'http://127.0.0.1:9000', KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1' }).oidcIssuers, ['http://127.0.0.1:9000']);
  t.throws(() => loadConfig({ ...base, KEYWARD_OIDC_ISSUERS: 'http://10.0.0.1:9000', KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1' }), { instanceOf: ConfigError });
  t.throws(() => loadConfig({ ...base, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: 'yes' }), { instanceOf: ConfigError, message: /^KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK:/ });
});
