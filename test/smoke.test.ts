import test from 'ava';
import { api, createOrg, startApp } from './support/app.js';

test('an organisation stores a credential and reads it back', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-smoke-0123456789' } });
  t.is(r.status, 201);
  t.is(r.body.key_hint, '…6789');
  const got = await api(app, 'GET', `/v1/credentials/${r.body.id}`, { token: org.token });
  t.is(got.status, 200);
  t.is(got.body.id, r.body.id);
});
