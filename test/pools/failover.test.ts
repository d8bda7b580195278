/**
 * Pools and failover against a fake provider whose answer depends on the key it receives: success through
 * the third member counted once, cooling members skipped, round-robin spread by weight, no retry once a
 * byte went out, no retry of a body over KEYWARD_RETRY_BODY_MAX, and the API's refusals.
 */
import test from 'ava';
import { api } from '../support/app.js';
import { poolFixture } from '../support/pool-fixture.js';
import { eventually } from '../support/wait.js';

test('a pooled request succeeds through the third member with x-keyward-attempts: 3, signed for each and counted once', async (t) => {
  const f = await poolFixture(t, [429, 'reset', 'ok']);
  const { id, token } = await f.pool({ strategy: 'ordered', name: 'openai keys' });
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'replay me' }], max_tokens: 16 };
  const res = await f.chat(token, body);
  t.is(res.status, 200);
  t.is(res.headers.get('x-keyward-attempts'), '3');
  t.is(((await res.json()) as any).choices[0].message.content, 'pooled');
  t.deepEqual(f.hits, [0, 1, 2], 'each member once, in order');
  const got = f.fake.received.map((r) => r.body);
  t.deepEqual(got.slice(-2), [JSON.stringify(body), JSON.stringify(body)], 'the body replayed byte for byte');
  const remaining = Number(res.headers.get('x-keyward-quota-remaining'));

  // Counted once (one quota unit), and its usage is the answering member's.
  const again = await f.chat(token);
  t.is(again.status, 200);
  t.is(again.headers.get('x-keyward-attempts'), '1', 'the failed members cool: the next request goes straight to the third');
  t.is(Number(again.headers.get('x-keyward-quota-remaining')), remaining - 1);
  t.deepEqual(f.hits.slice(3), [2]);

  const pool = await api(f.app, 'GET', `/v1/pools/${id}`, { token: f.org.token });
  t.is(pool.status, 200);
  t.is(pool.body.name, 'openai keys');
  const [m0, m1, m2] = pool.body.members;
  t.truthy(m0.cooling_until, 'the 429 member cools (its Retry-After: 20 s)');
  const cooling = Date.parse(m0.cooling_until) - Date.now();
  t.true(cooling > 10_000 && cooling <= 20_000, `cooling for its Retry-After (${cooling} ms left)`);
  t.truthy(m1.cooling_until, 'the failed member cools 5 s');
  t.is(m2.cooling_until, null);
  t.deepEqual([m0.recent, m1.recent, m2.recent], [{ '429': 1, '5xx': 0, errors: 0 }, { '429': 0, '5xx': 0, errors: 1 }, { '429': 0, '5xx': 0, errors: 0 }]);

  await t.notThrowsAsync(eventually(async () => {
    const usage = await api(f.app, 'GET', `/v1/credentials/${f.members[2]}`, { token: f.org.token });
    return usage.body.usage?.requests === 2 && usage.body.usage?.input_tokens === 10;
  }, 'the answering member\'s usage shows both requests'));
  const first = await api(f.app, 'GET', `/v1/credentials/${f.members[0]}`, { token: f.org.token });
  t.is(first.body.usage?.requests ?? 0, 0, 'a member that failed counts nothing');
});

test('round robin spreads requests by weight, evenly', async (t) => {
  const f = await poolFixture(t, ['ok', 'ok', 'ok']);
  const p = await api(f.app, 'POST', '/v1/pools', { token: f.org.token, body: { members: [{ credential_id: f.members[0] }, { credential_id: f.members[1] }, { credential_id: f.members[2], weight: 2 }] } });
  t.is(p.status, 201);
  t.is(p.body.strategy, 'round_robin');
  const tk = await api(f.app, 'POST', '/v1/tokens', { token: f.org.token, body: { pool_id: p.body.id, ttl: '15m' } });
  t.is(tk.body.pool_id, p.body.id);
  t.is(tk.body.credential_id, undefined);
  for (let i = 0; i < 40; i++) t.is((await f.chat(tk.body.token)).status, 200);
  const counts = [0, 1, 2].map((m) => f.hits.filter((h) => h === m).length);
  t.deepEqual(counts, [10, 10, 20]);
});

test('no retry once a byte went out: a stream the member cuts reaches the caller as a cut', async (t) => {
  const f = await poolFixture(t, ['cut', 'ok']);
  const { token } = await f.pool({ strategy: 'ordered' });
  const res = await f.chat(token, { model: 'gpt-4o-mini', messages: [], max_tokens: 4, stream: true });
  t.is(res.status, 200);
  t.is(res.headers.get('x-keyward-attempts'), '1');
  await t.throwsAsync(res.text(), undefined, 'never a clean end');
  t.deepEqual(f.hits, [0], 'no second member');
});

test('a body over KEYWARD_RETRY_BODY_MAX is not retried: the member\'s own answer reaches the caller', async (t) => {
  const f = await poolFixture(t, [503, 503, 'ok'], { env: { KEYWARD_RETRY_BODY_MAX: '1kb' } });
  const { token } = await f.pool({ strategy: 'ordered' });
  const big = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(2048) }], max_tokens: 4 };
  const res = await f.chat(token, big);
  t.is(res.status, 503);
  t.is(res.headers.get('x-keyward-attempts'), '1');
  t.deepEqual(f.hits, [0]);
  // A small body is retried (the first member cools for 5 s: the second, then the third).
  const small = await f.chat(token);
  t.is(small.status, 200);
  t.is(small.headers.get('x-keyward-attempts'), '2');
  t.deepEqual(f.hits, [0, 1, 2]);
});

test('a body the token\'s buffer share cannot hold is not kept, so not retried', async (t) => {
  const f = await poolFixture(t, [503, 'ok'], { env: { KEYWARD_BUFFER_PER_TOKEN: '1kb' } });
  const { token } = await f.pool({ strategy: 'ordered' });
  const res = await f.chat(token, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'y'.repeat(4096) }], max_tokens: 4 });
  t.is(res.status, 503, 'the member\'s own answer');
  t.is(res.headers.get('x-keyward-attempts'), '1');
  t.deepEqual(f.hits, [0]);
});

test('every member rate-limited: the provider\'s own 429 reaches the caller', async (t) => {
  const f = await poolFixture(t, [429, 429]);
  const { token } = await f.pool({ strategy: 'ordered' });
  const res = await f.chat(token);
  t.is(res.status, 429);
  t.is(res.headers.get('x-keyward-attempts'), '2');
  t.is(((await res.json()) as any).error.message, 'member said 429');
  // Both cooling: the one whose cooling ends first is tried alone.
  const next = await f.chat(token);
  t.is(next.status, 429);
  t.is(next.headers.get('x-keyward-attempts'), '1');
});

test('pools: members of two providers → 400; unknown member → 404; PATCH and DELETE (its tokens go with it)', async (t) => {
  const f = await poolFixture(t, ['ok']);
  const other = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body: { provider: 'anthropic', api_key: 'test-anthropic-member-key-0123456789' } });
  const mixed = await api(f.app, 'POST', '/v1/pools', { token: f.org.token, body: { members: [{ credential_id: f.members[0] }, { credential_id: other.body.id }] } });
  t.is(mixed.status, 400);
  t.is(mixed.body.error.code, 'invalid_request');
  t.regex(mixed.body.error.message, /anthropic and openai/);
  const missing = await api(f.app, 'POST', '/v1/pools', { token: f.org.token, body: { members: [{ credential_id: 'cred_000000000000000000000000' }] } });
  t.is(missing.status, 404);
  const empty = await api(f.app, 'POST', '/v1/pools', { token: f.org.token, body: { members: [] } });
  t.is(empty.status, 400);
  const { id, token } = await f.pool();
  const patched = await api(f.app, 'PATCH', `/v1/pools/${id}`, { token: f.org.token, body: { strategy: 'least_busy', name: 'renamed' } });
  t.is(patched.status, 200);
  t.is(patched.body.strategy, 'least_busy');
  const toOther = await api(f.app, 'PATCH', `/v1/pools/${id}`, { token: f.org.token, body: { members: [{ credential_id: other.body.id }] } });
  t.is(toOther.status, 400, 'a pool keeps its provider');
  const list = await api(f.app, 'GET', '/v1/pools?name=REN', { token: f.org.token });
  t.deepEqual(list.body.data.map((p: { id: string }) => p.id), [id]);
  t.is((await f.chat(token)).status, 200);
  t.is((await api(f.app, 'DELETE', `/v1/pools/${id}`, { token: f.org.token })).status, 200);
  t.is((await api(f.app, 'DELETE', `/v1/pools/${id}`, { token: f.org.token })).status, 404);
  t.is((await f.chat(token)).status, 401, 'its token went with it');
  const both = await api(f.app, 'POST', '/v1/tokens', { token: f.org.token, body: { pool_id: id, credential_id: f.members[0], ttl: '1m' } });
  t.is(both.status, 400);
});

test('least_busy: a member with a request in flight is passed over for an idle one, whatever the turn', async (t) => {
  const f = await poolFixture(t, ['ok', 'ok']);
  const open = new Map<number, Array<() => void>>([[0, []], [1, []]]);
  for (const m of [0, 1]) {
    f.behave(m, (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n');
      open.get(m)!.push(() => res.end('data: [DONE]\n\n'));
    });
  }
  const { token } = await f.pool({ strategy: 'least_busy' });
  const stream = { model: 'gpt-4o-mini', messages: [], stream: true };
  const first = await f.chat(token, stream);
  const second = await f.chat(token, stream);
  t.deepEqual([...f.hits].sort(), [0, 1], 'one each while both are idle');
  // The second request's member finishes: it is idle, the other still busy.
  const idle = f.hits[1]!;
  open.get(idle)!.shift()!();
  await second.text();
  const third = await f.chat(token, stream);
  t.is(f.hits[2], idle, 'the idle member, though by turn the other was next');
  for (const ends of open.values()) for (const end of ends) end();
  await Promise.all([first.text(), third.text()]);
});

test('a member deleted while its pool is cached is passed over: the next member answers', async (t) => {
  const f = await poolFixture(t, ['ok', 'ok']);
  const { token } = await f.pool({ strategy: 'ordered' });
  t.is((await f.chat(token)).status, 200);
  t.is((await api(f.app, 'DELETE', `/v1/credentials/${f.members[0]}`, { token: f.org.token })).status, 200);
  const res = await f.chat(token);
  t.is(res.status, 200);
  t.deepEqual(f.hits, [0, 1], 'the deleted member never reached again');
});
