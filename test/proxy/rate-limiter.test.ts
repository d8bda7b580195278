import test from 'ava';
import { ApiError } from '../../src/errors.js';
import { RateLimiter } from '../../src/accounting/rate-limiter.js';
import { mintToken } from '../support/app.js';
import { proxyFixture } from '../support/proxy-fixture.js';

test('unit: the token bucket holds the sustained rate to the limit (a full minute of burst, then perMinute/60 a second)', (t) => {
  let now = 0;
  const limiter = new RateLimiter(() => now);
  let passed = 0;
  let refused = 0;
  // 2 minutes of requests every 10 ms (6,000 a minute) against a limit of 600 a minute.
  for (now = 0; now < 120_000; now += 10) {
    try {
      limiter.take('tok', 600);
      passed++;
    } catch (err) {
      t.true(err instanceof ApiError && err.code === 'rate_limited');
      refused++;
    }
  }
  // The bucket starts full (600), then refills 600 a minute for 2 minutes: 1,800.
  t.true(Math.abs(passed - 1800) <= 2, `${passed} passed`);
  t.is(passed + refused, 12_000);
  // After the burst, any one minute admits the limit within 1 %.
  let inLastMinute = 0;
  for (now = 120_000; now < 180_000; now += 10) {
    try {
      limiter.take('tok', 600);
      inLastMinute++;
    } catch { /* refused */ }
  }
  t.true(Math.abs(inLastMinute - 600) <= 6, `${inLastMinute} in the third minute`);
  // Keys are independent, and Retry-After says when the next request fits.
  now = 180_000;
  t.notThrows(() => limiter.take('other', 600));
  const err = t.throws(() => { for (;;) limiter.take('tok', 1); }) as ApiError;
  t.is(err.headers['retry-after'] !== undefined, true);
  t.true(Number(err.headers['retry-after']) >= 1 && Number(err.headers['retry-after']) <= 60);
});

test('unit: refund gives back the unit a refused request took, never past the limit', (t) => {
  const now = 0;
  const limiter = new RateLimiter(() => now);
  limiter.take('tok', 2);
  limiter.take('tok', 2);
  t.throws(() => limiter.take('tok', 2));
  limiter.refund('tok', 2);
  t.notThrows(() => limiter.take('tok', 2));
  t.throws(() => limiter.take('tok', 2));
  // A full bucket stays at the limit; an unknown key is nothing to refund.
  limiter.refund('fresh', 2);
  limiter.take('full', 2);
  limiter.refund('full', 2);
  limiter.refund('full', 2);
  limiter.take('full', 2);
  limiter.take('full', 2);
  t.throws(() => limiter.take('full', 2));
});

test('a request refused after the rate check (max_requests, quota) does not spend the token\'s rate_limit', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_FREE_PROXY_REQUESTS: '2' } });
  const codes = async (token: string, n: number) => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': token } });
      out.push(r.status === 200 ? '200' : ((await r.json()) as any).error.code);
    }
    return out;
  };
  // max_requests 1 with rate_limit 3: every refusal after the first request is token_exhausted, never rate_limited.
  const capped = await mintToken(f.app, f.org, f.credentials.openai, '15m', { max_requests: 1, rate_limit: 3 });
  t.deepEqual(await codes(capped.token, 6), ['200', 'token_exhausted', 'token_exhausted', 'token_exhausted', 'token_exhausted', 'token_exhausted']);
  // The org's quota (2, one used) with rate_limit 3: the same.
  const limited = await mintToken(f.app, f.org, f.credentials.openai, '15m', { rate_limit: 3 });
  t.deepEqual(await codes(limited.token, 6), ['200', 'quota_exceeded', 'quota_exceeded', 'quota_exceeded', 'quota_exceeded', 'quota_exceeded']);
  t.is(f.fake.received.length, 2);
});
