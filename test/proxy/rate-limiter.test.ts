import test from 'ava';
import { ApiError } from '../../src/errors.js';
import { RateLimiter } from '../../src/gateway/rate-limiter.js';

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
