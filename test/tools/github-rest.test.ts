/**
 * GitHub's REST API (`github`, kind tool) through the proxy with a ptok, against a fake that requires the
 * stored token: the ptok works as `Authorization: Bearer` and as `Authorization: token` (gh, Octokit), the
 * stored token goes upstream as Bearer and nothing else does (another provider's token is not taken from
 * `Authorization: token`), and pagination (`Link`) and rate-limit
 * (`x-ratelimit-*`) headers come back byte for byte; PATCH reaches a route that declares it, a path off the
 * allow-list is refused with nothing sent.
 */
import test from 'ava';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { canaryKey } from '../support/proxy-fixture.js';
import { request } from '../support/request.js';
import { startRecordingUpstream } from '../support/mcp-fake.js';

const LINK = '<https://api.github.com/repositories/1296269/issues?per_page=2&page=2>; rel="next", <https://api.github.com/repositories/1296269/issues?per_page=2&page=7>; rel="last"';
const RATE = { 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '4987', 'x-ratelimit-reset': '1795000000', 'x-ratelimit-used': '13', 'x-ratelimit-resource': 'core' };

test('github REST with a ptok: the stored token upstream, Link and x-ratelimit-* passed through unchanged', async (t) => {
  const key = `ghp_${canaryKey('github').replace(/-/g, '')}`;
  const upstream = await startRecordingUpstream((r) => (r.headers.authorization === `Bearer ${key}`
    ? { type: 'application/json; charset=utf-8', body: JSON.stringify([{ number: 1, title: 'one' }, { number: 2, title: 'two' }]), headers: { link: LINK, ...RATE } }
    : { type: 'application/json', body: '{"message":"Bad credentials"}' }));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_GITHUB: upstream.url } });
  const org = await createOrg(app);
  const tok = await mintToken(app, org, await createCredential(app, org, 'github', key));

  for (const scheme of ['Bearer', 'token']) {
    const r = await request(`${app.url}/v1/proxy/repos/octocat/hello-world/issues?per_page=2&page=1`, { method: 'GET', headers: { authorization: `${scheme} ${tok.token}`, 'user-agent': 'keyward-test' } });
    t.is(r.status, 200, scheme);
    t.deepEqual(r.body.map((i: { number: number }) => i.number), [1, 2]);
    t.is(r.headers.link, LINK, `${scheme}: Link unchanged`);
    for (const [name, value] of Object.entries(RATE)) t.is(r.headers[name], value, `${scheme}: ${name} unchanged`);
  }
  const patched = await request(`${app.url}/v1/proxy/repos/octocat/hello-world/issues/1`, { method: 'PATCH', headers: { authorization: `token ${tok.token}` }, body: '{"state":"closed"}' });
  t.is(patched.status, 200);
  const offList = await request(`${app.url}/v1/proxy/admin/users`, { method: 'GET', headers: { authorization: `token ${tok.token}` } });
  t.is(offList.status, 403);
  t.is(offList.body.error.code, 'path_not_allowed');

  // `Authorization: token …` is where GitHub's clients put a key: another provider's token is not taken from it.
  const other = await mintToken(app, org, await createCredential(app, org, 'tavily', 'tvly-0123456789abcdef'));
  const elsewhere = await request(`${app.url}/v1/proxy/search`, { headers: { authorization: `token ${other.token}` }, body: '{"query":"x"}' });
  t.is(elsewhere.status, 401);
  t.is(elsewhere.body.error.code, 'invalid_token');

  t.is(upstream.requests.length, 3, 'two GETs and the PATCH, nothing for the refused path');
  t.deepEqual(upstream.requests.map((r) => `${r.method} ${r.path}`), [
    'GET /repos/octocat/hello-world/issues?per_page=2&page=1', 'GET /repos/octocat/hello-world/issues?per_page=2&page=1', 'PATCH /repos/octocat/hello-world/issues/1',
  ]);
  for (const r of upstream.requests) {
    t.is(r.headers.authorization, `Bearer ${key}`);
    t.false(JSON.stringify(r).includes(tok.token), 'the ptok never went upstream');
  }
  t.is(upstream.requests[2]!.body, '{"state":"closed"}');
});
