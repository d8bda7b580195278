/**
 * Account-selection headers (contract, Hardening): `openai-organization`, `openai-project` and
 * `x-goog-user-project` pick which organisation or project a key acts for, so they are never taken
 * from the caller. A credential carries them as plain fields its provider declares (OpenAI's
 * `organization` and `project`, Gemini's `project`), set by the organisation at
 * POST /v1/credentials, validated, returned in its view, and sent upstream in their header.
 */
import test from 'ava';
import { api, createCredential, mintToken } from '../support/app.js';
import { proxyFixture, type ProxyFixture } from '../support/proxy-fixture.js';
import { request } from '../support/request.js';

const SELECTION = ['openai-organization', 'openai-project', 'x-goog-user-project'];
const CALLER = { 'openai-organization': 'org-caller', 'openai-project': 'proj_caller', 'x-goog-user-project': 'caller-project' };

/** How many times each account-selection header reached the provider on its last request, and with what. */
function lastSelection(f: ProxyFixture): Record<string, string[]> {
  const raw = f.fake.received.at(-1)!.rawHeaders;
  const out: Record<string, string[]> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (SELECTION.includes(name)) (out[name] ??= []).push(raw[i + 1]!);
  }
  return out;
}

async function credentialWith(f: ProxyFixture, body: Record<string, unknown>): Promise<{ id: string; token: string; view: any }> {
  const r = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body });
  if (r.status !== 201) throw new Error(`credential: ${r.status} ${r.text}`);
  return { id: r.body.id, token: (await mintToken(f.app, f.org, r.body.id)).token, view: r.body };
}

test('a caller\'s openai-organization, openai-project and x-goog-user-project never reach upstream, whatever the provider', async (t) => {
  const f = await proxyFixture(t);
  const chat = '{"model":"m","messages":[]}';
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token, ...CALLER }, body: chat })).status, 200);
  t.deepEqual(lastSelection(f), {}, 'openai');
  t.is((await request(f.proxyUrl('v1/messages'), { headers: { 'x-api-key': f.tokens.anthropic.token, ...CALLER }, body: '{"model":"c","max_tokens":5,"messages":[]}' })).status, 200);
  t.deepEqual(lastSelection(f), {}, 'anthropic');
  t.is((await request(f.proxyUrl('v1beta/models/gemini-2.0-flash:generateContent'), { headers: { 'x-goog-api-key': f.tokens.gemini.token, ...CALLER }, body: '{"contents":[]}' })).status, 200);
  t.deepEqual(lastSelection(f), {}, 'gemini');
  // Nor smuggled in under another case, nor named in Connection to slip through.
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token, 'OpenAI-Organization': 'org-caller2', connection: 'keep-alive' }, body: chat })).status, 200);
  t.deepEqual(lastSelection(f), {});
  // Other caller headers still pass.
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token, 'openai-beta': 'assistants=v2', ...CALLER }, body: chat })).status, 200);
  t.is(f.fake.received.at(-1)!.headers['openai-beta'], 'assistants=v2');
});

test('a credential\'s own organization and project are sent upstream, once, in place of the caller\'s', async (t) => {
  const f = await proxyFixture(t);
  const oa = await credentialWith(f, { provider: 'openai', api_key: 'sk-test-fields-org-0123456789', organization: 'org-AbC123', project: 'proj_xyz' });
  t.is(oa.view.organization, 'org-AbC123');
  t.is(oa.view.project, 'proj_xyz');
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': oa.token, ...CALLER }, body: '{"model":"m","messages":[]}' })).status, 200);
  t.deepEqual(lastSelection(f), { 'openai-organization': ['org-AbC123'], 'openai-project': ['proj_xyz'] });

  // Only the fields given: organization alone sends no project header.
  const orgOnly = await credentialWith(f, { provider: 'openai', api_key: 'sk-test-fields-org-9876543210', organization: 'org-only' });
  t.is(orgOnly.view.project, undefined);
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': orgOnly.token, 'openai-project': 'proj_caller' }, body: '{"model":"m","messages":[]}' })).status, 200);
  t.deepEqual(lastSelection(f), { 'openai-organization': ['org-only'] });

  const gm = await credentialWith(f, { provider: 'gemini', api_key: 'AIza-test-fields-0123456789', project: 'billing-project-1' });
  t.is((await request(f.proxyUrl('v1beta/models/gemini-2.0-flash:generateContent'), { headers: { 'x-goog-api-key': gm.token, ...CALLER }, body: '{"contents":[]}' })).status, 200);
  t.deepEqual(lastSelection(f), { 'x-goog-user-project': ['billing-project-1'] });

  // Returned by GET and in the list, never the key.
  const got = await api(f.app, 'GET', `/v1/credentials/${oa.id}`, { token: f.org.token });
  t.is(got.body.organization, 'org-AbC123');
  t.is(got.body.project, 'proj_xyz');
  const listed = (await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).body.data.find((c: any) => c.id === gm.id);
  t.is(listed.project, 'billing-project-1');
  t.false(JSON.stringify(got.body).includes('sk-test-fields-org-0123456789'));
});

test('a bad or undeclared credential field → 400 invalid_request naming it; nothing is stored', async (t) => {
  const f = await proxyFixture(t);
  const before = (await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).body.data.length;
  const key = 'sk-test-bad-fields-0123456789';
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ provider: 'anthropic', api_key: key, organization: 'org-1' }, 'organization'],
    [{ provider: 'gemini', api_key: key, organization: 'org-1' }, 'organization'],
    [{ provider: 'openai', api_key: key, region: 'us' }, 'region'],
    [{ provider: 'openai', api_key: key, organization: 'has space' }, 'organization'],
    [{ provider: 'openai', api_key: key, organization: '' }, 'organization'],
    [{ provider: 'openai', api_key: key, organization: 'o'.repeat(201) }, 'organization'],
    [{ provider: 'openai', api_key: key, organization: 42 }, 'organization'],
    [{ provider: 'openai', api_key: key, organization: null }, 'organization'],
    [{ provider: 'openai', api_key: key, organization: ['org-1'] }, 'organization'],
    [{ provider: 'openai', api_key: key, project: 'proj\r\nx-injected: 1' }, 'project'],
    [{ provider: 'openai', api_key: key, project: 'prój' }, 'project'],
    [{ provider: 'gemini', api_key: key, project: 'a\tb' }, 'project'],
    [{ provider: 'openai', api_key: key, constructor: 'x' }, 'constructor'],
  ];
  for (const [body, param] of cases) {
    const r = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body });
    const label = JSON.stringify(body).slice(0, 120);
    t.is(r.status, 400, label);
    t.is(r.body.error.code, 'invalid_request', label);
    t.is(r.body.error.param, param, label);
    t.true(r.body.error.message.includes(param), label);
    t.false(r.text.includes(key), 'never echoes the key');
  }
  // 200 printable characters is the longest accepted.
  t.is((await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body: { provider: 'openai', api_key: key, organization: 'o'.repeat(200) } })).status, 201);
  // An unknown provider is still named as such first.
  const unknown = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body: { provider: 'nope', api_key: key, organization: 'org-1' } });
  t.is(unknown.body.error.code, 'unknown_provider');
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).body.data.length, before + 1);
  // A plain credential still works as before.
  t.truthy(await createCredential(f.app, f.org, 'openai', 'sk-test-plain-credential-01'));
});
