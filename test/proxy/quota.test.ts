/**
 * The free tier's monthly proxy requests (KEYWARD_FREE_PROXY_REQUESTS), through
 * real HTTP: exact under concurrency, counted only when forwarded, shown by
 * GET /v1/usage and x-keyward-quota-remaining, and still exact after a graceful
 * restart on the same data dir (leased, unused units are handed back).
 */
import test from 'ava';
import { api, createCredential, createOrg, mintToken, startApp, tempDir } from '../support/app.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { ManualClock } from '../support/clocks.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { quiet } from '../support/wait.js';
import { request } from '../support/request.js';

const CHAT = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });

function tally(results: Array<{ status: number; body: any }>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    const k = r.status === 200 ? '200' : `${r.status} ${r.body?.error?.code}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** The month's requests as GET /v1/usage shows them: used and limit (and what is held never takes the sum past the limit). */
async function usage(app: Parameters<typeof api>[0], orgToken: string): Promise<{ used: number; limit: number }> {
  const r = await api(app, 'GET', '/v1/usage', { token: orgToken });
  const { used, held, limit } = r.body.proxy_requests as { used: number; held: number; limit: number };
  if (!(Number.isInteger(held) && held >= 0 && used + held <= limit)) throw new Error(`used ${used} + held ${held} > limit ${limit}`);
  return { used, limit };
}

test('200 parallel requests against a limit of 50: exactly 50 forwarded, 150 refused with 429 quota_exceeded', async (t) => {
  const timers = new ManualClock();
  const f = await proxyFixture(t, { timers, env: { KEYWARD_FREE_PROXY_REQUESTS: '50' } });
  const results = await Promise.all(Array.from({ length: 200 }, () => request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token }, body: CHAT })));
  t.deepEqual(tally(results), { '200': 50, '429 quota_exceeded': 150 });
  t.is(f.fake.received.length, 50, 'the provider saw exactly the limit');
  for (const r of results.filter((x) => x.status === 429)) {
    t.is(r.body.error.type, 'rate_limit');
    t.regex(String(r.headers['retry-after']), /^[1-9][0-9]*$/);
  }
  // Every forwarded request saw a different remaining count, from 49 down to 0.
  const remaining = results.filter((r) => r.status === 200).map((r) => Number(r.headers['x-keyward-quota-remaining'])).sort((a, b) => a - b);
  t.deepEqual(remaining, Array.from({ length: 50 }, (_, i) => i));
  // Read at once (unflushed counts included) and after the background flush.
  t.deepEqual(await usage(f.app, f.org.token), { used: 50, limit: 50 });
  await quiet(f.app);
  await timers.tick(1000);
  t.deepEqual(await usage(f.app, f.org.token), { used: 50, limit: 50 });
  // Still refused afterwards, on any provider of the organisation.
  t.is((await request(f.proxyUrl('v1/messages'), { headers: { 'x-proxy-token': f.tokens.anthropic.token }, body: CHAT })).body?.error?.code, 'quota_exceeded');
  t.is(f.fake.received.length, 50);
});

test('refused requests (401, 403, 413 by content-length) never count; x-keyward-quota-remaining falls by one per forwarded request', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_FREE_PROXY_REQUESTS: '100', KEYWARD_MAX_BODY: '1kb', KEYWARD_AUTH_FAILURES: '1000000' } });
  const token = f.tokens.openai.token;
  const first = await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': token }, body: CHAT });
  t.is(first.status, 200);
  t.is(first.headers['x-keyward-quota-remaining'], '99');

  const refusals = await Promise.all([
    ...Array.from({ length: 10 }, () => request(f.proxyUrl('v1/chat/completions'), { body: CHAT })),
    ...Array.from({ length: 10 }, () => request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A') }, body: CHAT })),
    ...Array.from({ length: 10 }, () => request(f.proxyUrl('v1/files'), { headers: { 'x-proxy-token': token }, body: CHAT })),
    ...Array.from({ length: 10 }, () => request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': token }, body: 'x'.repeat(2048) })),
  ]);
  t.deepEqual(tally(refusals), { '401 invalid_token': 20, '403 path_not_allowed': 10, '413 payload_too_large': 10 });
  t.deepEqual(await usage(f.app, f.org.token), { used: 1, limit: 100 });
  t.is(f.fake.received.length, 1);

  let previous = 99;
  for (let i = 0; i < 5; i++) {
    const r = await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': token }, body: CHAT });
    t.is(r.status, 200);
    const now = Number(r.headers['x-keyward-quota-remaining']);
    t.is(now, previous - 1, 'refusals in between took nothing');
    previous = now;
  }
  t.deepEqual(await usage(f.app, f.org.token), { used: 6, limit: 100 });
});

test('quotas are per organisation', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_FREE_PROXY_REQUESTS: '3' } });
  const other = await createOrg(f.app, 'other');
  const cred = await createCredential(f.app, other, 'openai', 'sk-other-org-key-0123456789');
  const tok = await mintToken(f.app, other, cred);
  const mine = await Promise.all(Array.from({ length: 6 }, () => request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token }, body: CHAT })));
  t.deepEqual(tally(mine), { '200': 3, '429 quota_exceeded': 3 });
  const theirs = await Promise.all(Array.from({ length: 6 }, () => request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': tok.token }, body: CHAT })));
  t.deepEqual(tally(theirs), { '200': 3, '429 quota_exceeded': 3 });
  t.deepEqual(await usage(f.app, other.token), { used: 3, limit: 3 });
  t.is(f.fake.received.length, 6);
});

test('after a graceful stop and restart on the same data dir the limit is reached exactly (50: 20, restart, 30 more)', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const dataDir = tempDir(t);
  const env = { KEYWARD_FREE_PROXY_REQUESTS: '50', KEYWARD_UPSTREAM_OPENAI: fake.url };
  const app1 = await startApp(t, { dataDir, env });
  const org = await createOrg(app1);
  const cred = await createCredential(app1, org, 'openai', 'sk-restart-key-0123456789');
  const tok = await mintToken(app1, org, cred, '1h');
  const url1 = `${app1.url}/v1/proxy/v1/chat/completions`;
  const firstBatch = await Promise.all(Array.from({ length: 20 }, () => request(url1, { headers: { 'x-proxy-token': tok.token }, body: CHAT })));
  t.deepEqual(tally(firstBatch), { '200': 20 });
  // app1 holds leased units it has not used; a graceful stop hands them back.
  await app1.stop();

  const app2 = await startApp(t, { dataDir, env });
  t.deepEqual(await usage(app2, org.token), { used: 20, limit: 50 }, 'the usage was flushed on stop');
  const url2 = `${app2.url}/v1/proxy/v1/chat/completions`;
  const secondBatch = await Promise.all(Array.from({ length: 60 }, () => request(url2, { headers: { 'x-proxy-token': tok.token }, body: CHAT })));
  t.deepEqual(tally(secondBatch), { '200': 30, '429 quota_exceeded': 30 });
  t.is(fake.received.length, 50);
  t.deepEqual(await usage(app2, org.token), { used: 50, limit: 50 });
  await app2.stop();

  // And a third start finds nothing left.
  const app3 = await startApp(t, { dataDir, env });
  const after = await request(`${app3.url}/v1/proxy/v1/chat/completions`, { headers: { 'x-proxy-token': tok.token }, body: CHAT });
  t.is(after.status, 429);
  t.is(after.body.error.code, 'quota_exceeded');
  t.is(fake.received.length, 50);
});

test('the quota is per calendar month (UTC): a new month starts afresh, and usage reports the new period', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 30, 23, 59, 50));
  const f = await proxyFixture(t, { clock, env: { KEYWARD_FREE_PROXY_REQUESTS: '2' } });
  const tok = await mintToken(f.app, f.org, f.credentials.openai, '1h');
  const call = () => request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': tok.token }, body: CHAT });
  t.deepEqual(tally([await call(), await call(), await call()]), { '200': 2, '429 quota_exceeded': 1 });
  const november = await api(f.app, 'GET', '/v1/usage', { token: f.org.token });
  t.is(november.body.period, '2026-11');
  t.deepEqual(november.body.proxy_requests, { used: 2, held: 0, limit: 2 });
  const refused = await call();
  t.is(refused.headers['retry-after'], '10', 'ten seconds to midnight UTC');

  clock.advance(10_000); // 2026-12-01T00:00:00Z
  const december = [await call(), await call(), await call()];
  t.deepEqual(tally(december), { '200': 2, '429 quota_exceeded': 1 });
  t.is(december[2]!.headers['retry-after'], String(31 * 86_400), 'a whole month until January');
  const usage = await api(f.app, 'GET', '/v1/usage', { token: f.org.token });
  t.is(usage.body.period, '2026-12');
  t.deepEqual(usage.body.proxy_requests, { used: 2, held: 0, limit: 2 });
  t.is(f.fake.received.length, 4);
});
