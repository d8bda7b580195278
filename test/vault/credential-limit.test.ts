import test from 'ava';
import { api, createOrg, startApp } from '../support/app.js';

const create = (app: Parameters<typeof api>[0], token: string, i: number) =>
  api(app, 'POST', '/v1/credentials', { token, body: { provider: i % 2 ? 'openai' : 'anthropic', api_key: `sk-test-concurrent-${String(i).padStart(4, '0')}` } });

test('20 concurrent creates with the default limit store exactly 10; the other 10 get 403 limit_exceeded', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => create(app, org.token, i)));
  const created = results.filter((r) => r.status === 201);
  const refused = results.filter((r) => r.status === 403);
  t.is(created.length, 10);
  t.is(refused.length, 10);
  for (const r of refused) t.is(r.body.error.code, 'limit_exceeded');
  const list = await api(app, 'GET', '/v1/credentials?limit=100', { token: org.token });
  t.is(list.body.data.length, 10);
  t.deepEqual(list.body.data.map((c: any) => c.id).sort(), created.map((r) => r.body.id).sort());
  t.deepEqual((await api(app, 'GET', '/v1/usage', { token: org.token })).body.credentials, { used: 10, limit: 10 });
});

test('two servers on one data dir (two store connections) racing 15 creates each still stop at exactly 10', async (t) => {
  const a = await startApp(t);
  const b = await startApp(t, { dataDir: a.dataDir });
  const org = await createOrg(a);
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => create(i % 2 ? a : b, org.token, i)));
  t.is(results.filter((r) => r.status === 201).length, 10);
  t.is(results.filter((r) => r.status === 403 && r.body.error.code === 'limit_exceeded').length, 20);
  t.is((await api(b, 'GET', '/v1/credentials?limit=100', { token: org.token })).body.data.length, 10);
});

test('concurrent deletes and creates: the count never passes the limit and deleted slots are reusable', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_FREE_CREDENTIALS: '5' } });
  const org = await createOrg(app);
  const first = await Promise.all(Array.from({ length: 5 }, (_, i) => create(app, org.token, i)));
  const ids = first.map((r) => r.body.id as string);
  const mixed = await Promise.all([
    ...ids.slice(0, 3).map((id) => api(app, 'DELETE', `/v1/credentials/${id}`, { token: org.token })),
    ...Array.from({ length: 8 }, (_, i) => create(app, org.token, 100 + i)),
  ]);
  t.true(mixed.slice(0, 3).every((r) => r.status === 200));
  const made = mixed.slice(3).filter((r) => r.status === 201).length;
  t.true(made <= 3);
  const count = (await api(app, 'GET', '/v1/credentials?limit=100', { token: org.token })).body.data.length;
  t.is(count, 2 + made);
  t.true(count <= 5);
  // Whatever the interleaving, the free slots can be filled afterwards, and not one more.
  const fill = await Promise.all(Array.from({ length: 6 }, (_, i) => create(app, org.token, 200 + i)));
  t.is(fill.filter((r) => r.status === 201).length, 5 - count);
  t.is((await api(app, 'GET', '/v1/credentials?limit=100', { token: org.token })).body.data.length, 5);
});
