/**
 * Vertex's building blocks alone: KEYWARD_GOOGLE_TOKEN_URI and GCE_METADATA_HOST as the
 * config reads them, the token cache's single flight (one mint for a burst, a failure shared
 * by its waiters only, refresh in the background before expiry), `@` in a model segment, and the `pinsPath` declaration rule.
 */
import test from 'ava';
import { ConfigError, loadConfig } from '../../src/settings/config.js';
import { normaliseProviderPath } from '../../src/catalog/path.js';
import { validateProvider } from '../../src/catalog/provider-check.js';
import { MintedCache } from '../../src/gateway/upstream/signers/minted-cache.js';
import { sleep } from '../support/wait.js';

const base = { KEYWARD_DATA_DIR: '/tmp', KEYWARD_ADMIN_TOKEN: 'test-admin-token-0123456789abcdef' };

test('config: the token URI defaults to Google\'s; an override must be an http(s) URL without credentials or query', (t) => {
  t.is(loadConfig(base).googleTokenUri, 'https://oauth2.googleapis.com/token');
  t.is(loadConfig({ ...base, KEYWARD_GOOGLE_TOKEN_URI: 'http://127.0.0.1:9999/token' }).googleTokenUri, 'http://127.0.0.1:9999/token');
  for (const bad of ['ftp://x/token', 'not a url', 'https://user:pw@x/token', 'https://x/token?a=1']) {
    t.throws(() => loadConfig({ ...base, KEYWARD_GOOGLE_TOKEN_URI: bad }), { instanceOf: ConfigError }, bad);
  }
});

test('config: the metadata host as gcp-metadata reads it (host:port, or a URL whose path is ignored; GCE_METADATA_IP first)', (t) => {
  t.is(loadConfig(base).gceMetadataHost, 'http://169.254.169.254');
  t.is(loadConfig({ ...base, GCE_METADATA_HOST: '127.0.0.1:8123' }).gceMetadataHost, 'http://127.0.0.1:8123');
  t.is(loadConfig({ ...base, GCE_METADATA_HOST: 'https://md.example:8443/ignored/path' }).gceMetadataHost, 'https://md.example:8443');
  t.is(loadConfig({ ...base, GCE_METADATA_HOST: '127.0.0.1:1', GCE_METADATA_IP: '10.0.0.9' }).gceMetadataHost, 'http://10.0.0.9');
});

test('token cache: 200 concurrent gets make one mint; refreshed in the background before expiry; a failure goes to its waiters only', async (t) => {
  let now = 1_000_000;
  let mints = 0;
  let fail = false;
  /** The latest mint, so the test can wait for a background one to settle (an event, not a sleep). */
  let minting: Promise<unknown> = Promise.resolve();
  const cache = new MintedCache(() => {
    const mint = (async () => {
      mints++;
      await sleep(10); // paces the fake mint, so concurrent gets find it in flight
      if (fail) throw new Error('refused');
      return { value: `tok-${mints}`, lifetimeMs: 3600 * 1000 };
    })();
    minting = mint.catch(() => undefined);
    return mint;
  }, () => now);
  const got = await Promise.all(Array.from({ length: 200 }, () => cache.get()));
  t.deepEqual([...new Set(got)], ['tok-1']);
  t.is(mints, 1);
  t.is(cache.get(), 'tok-1', 'a cached token is handed out synchronously');
  now += 3300 * 1000 - 1;
  t.is(cache.get(), 'tok-1', 'still fresh just before the five-minute margin');
  t.is(mints, 1);
  now += 1;
  fail = true;
  // From five minutes before expiry a refresh runs in the background: the request is not kept waiting.
  t.is(cache.get(), 'tok-1');
  t.is(mints, 2);
  await minting;
  await new Promise((r) => setImmediate(r)); // the cache's own handlers of that failure have run
  t.is(cache.get(), 'tok-1', 'a failed background refresh leaves the current token serving');
  t.is(mints, 2, 'and is not retried at once');
  now = 1_000_000 + 3540 * 1000;
  // Within a minute of expiry the token is never handed out: callers wait for the next, and share its failure.
  const failed = await Promise.allSettled(Array.from({ length: 20 }, () => cache.get()));
  t.true(failed.every((r) => r.status === 'rejected'));
  t.is(mints, 3);
  fail = false;
  t.is(await cache.get(), 'tok-4', 'the next call tries again');
  t.deepEqual(cache.masks(), ['tok-4', 'tok-1']);
});

test('path: `@` is allowed in a segment (Vertex model versions), encoded or not', (t) => {
  t.is(normaliseProviderPath('v1/models/claude-sonnet-4@20250514:rawPredict'), 'v1/models/claude-sonnet-4@20250514:rawPredict');
  t.is(normaliseProviderPath('v1/models/claude-sonnet-4%4020250514:rawPredict'), 'v1/models/claude-sonnet-4@20250514:rawPredict');
  t.is(normaliseProviderPath('v1/models/a%2Fb'), undefined);
  t.is(normaliseProviderPath('v1/@evil'), undefined, 'never first in a segment');
});

test('pinsPath: only a required plain field may pin a path parameter', (t) => {
  const provider = (field: Record<string, unknown>) => ({
    id: 'pinned', upstream: 'https://api.pinned.test', auth: { kind: 'header', header: 'x-api-key' },
    credential: { fields: { api_key: { secret: true }, project: field } },
    routes: [{ method: 'POST', path: 'v1/{project}/run' }],
  });
  t.notThrows(() => validateProvider('pinned.js', provider({ pattern: /^[a-z]{3,20}$/, pinsPath: true })));
  t.throws(() => validateProvider('pinned.js', provider({ secret: true, pinsPath: true })), { message: /pinsPath/ });
  t.throws(() => validateProvider('pinned.js', provider({ optional: true, pinsPath: true })), { message: /pinsPath/ });
  t.throws(() => validateProvider('pinned.js', provider({ pinsPath: 'yes' })), { message: /pinsPath/ });
});
