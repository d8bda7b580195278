/**
 * Plugins added with no code change: a provider file dropped into
 * KEYWARD_PROVIDERS_DIR and a middleware file in KEYWARD_PLUGINS_DIR named in
 * KEYWARD_PLUGINS (sources in test/support/plugins/, plain ESM). Bad files or
 * bad plugin configuration stop start-up; the core's stages (auth first, quota
 * last) are always on whatever KEYWARD_PLUGINS says, and an older list naming
 * them still starts; a failing onDone never touches a response.
 *
 * The IP allow-list plugin reads ACME_ALLOWED_IPS from process.env in its
 * constructor, so the tests that set it run serially.
 */
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ADMIN_TOKEN, api, createCredential, createOrg, mintToken, ROOT, spawnServer, startApp, tempDir, type StartOptions, type TestApp } from '../support/app.js';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.js';
import { pluginConfig, type Config } from '../../src/settings/config.js';
import { quiet } from '../support/wait.js';
import { Symbols } from '../../src/symbols.js';
import type { Pipeline } from '../../src/gateway/pipeline/pipeline.js';
import { request } from '../support/request.js';

const EXAMPLES = path.join(ROOT, 'test/support/plugins');
const CHAT = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });

/** A providers folder (added to the package's built providers) of `extra` files (name → source or example file). */
function providersDir(t: ExecutionContext, extra: Record<string, string>): string {
  const dir = tempDir(t, 'keyward-providers-');
  for (const [name, source] of Object.entries(extra)) writeFileSync(path.join(dir, name), source);
  return dir;
}

/** A plugins folder holding only the named example files (the built-ins stay in the package). */
function pluginsDir(t: ExecutionContext, names: string[]): string {
  const dir = tempDir(t, 'keyward-plugins-');
  for (const n of names) copyFileSync(path.join(EXAMPLES, `${n}.js`), path.join(dir, `${n}.js`));
  return dir;
}

/** Sets process.env for the plugin constructors of one start-up, then restores it. */
async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(vars)) {
    saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

interface Setup {
  app: TestApp;
  fake: FakeProvider;
  org: { id: string; token: string };
  token: string;
  url: string;
}

/** A gateway with an openai credential pointed at a fresh fake and one token. */
async function gateway(t: ExecutionContext, options: StartOptions & { ips?: string | undefined }): Promise<Setup> {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await withEnv({ ACME_ALLOWED_IPS: options.ips }, () => startApp(t, { ...options, env: { KEYWARD_UPSTREAM_OPENAI: fake.url, ...options.env } }));
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-plugins-test-key-0123456789');
  const { token } = await mintToken(app, org, cred);
  return { app, fake, org, token, url: `${app.url}/v1/proxy/v1/chat/completions` };
}

async function used(s: Setup): Promise<number> {
  return (await api(s.app, 'GET', '/v1/usage', { token: s.org.token })).body.proxy_requests.used;
}

test('an added provider file works with no code change: its key header, defaults and allow-list', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const dir = providersDir(t, { 'acme.js': readFileSync(path.join(EXAMPLES, 'acme.js'), 'utf8') });
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: dir, KEYWARD_UPSTREAM_ACME: fake.url, KEYWARD_UPSTREAM_OPENAI: fake.url } });
  const org = await createOrg(app);
  const key = 'acme-secret-key-0123456789';
  const cred = await createCredential(app, org, 'acme', key);
  const { token } = await mintToken(app, org, cred);

  const r = await request(`${app.url}/v1/proxy/v1/generate?stream=false`, { headers: { 'x-proxy-token': token, 'x-acme-key': 'caller-supplied' }, body: '{"prompt":"hi"}' });
  t.is(r.status, 200);
  t.deepEqual(r.body, { ok: true, method: 'POST', path: '/v1/generate' });
  const got = fake.received.at(-1)!;
  t.is(got.url, '/v1/generate?stream=false');
  t.is(got.headers['x-acme-key'], key, 'the stored key, in the provider file\'s header');
  t.is(got.headers['acme-version'], '2026-01-01', 'the provider file\'s default headers');
  t.is(got.headers['x-proxy-token'], undefined);
  t.is(got.body, '{"prompt":"hi"}');
  t.false(got.rawHeaders.includes('caller-supplied'), 'exactly one credential upstream');

  // Its allow-list is the file's.
  const off = await request(`${app.url}/v1/proxy/v1/chat/completions`, { headers: { 'x-proxy-token': token }, body: CHAT });
  t.is(off.status, 403);
  t.is(off.body.error.code, 'path_not_allowed');
  t.is(fake.received.length, 1);
  // The copied built-in providers still work beside it.
  const oaCred = await createCredential(app, org, 'openai', 'sk-openai-beside-acme-0123');
  const oa = await mintToken(app, org, oaCred);
  t.is((await request(`${app.url}/v1/proxy/v1/chat/completions`, { headers: { 'x-proxy-token': oa.token }, body: CHAT })).status, 200);

  // Without the file, the same gateway code knows no acme.
  const plain = await startApp(t);
  const org2 = await createOrg(plain);
  const refused = await api(plain, 'POST', '/v1/credentials', { token: org2.token, body: { provider: 'acme', api_key: key } });
  t.is(refused.status, 400);
  t.is(refused.body.error.code, 'unknown_provider');
});

test('a malformed provider file stops start-up with an error naming the file', async (t) => {
  const variants: Record<string, string> = {
    'no-auth.js': "export default { apiVersion: 1, id: 'broken', upstream: 'https://api.broken.test', routes: [{ method: 'POST', path: 'v1/x' }] };",
    'first-form.js': "export default { apiVersion: 1, id: 'broken', upstream: 'https://api.broken.test', keyHeader: 'x-key', allow: [{ method: 'POST', path: 'v1/x' }] };",
    'plain-http.js': "export default { apiVersion: 1, id: 'broken', upstream: 'http://api.broken.test', auth: { kind: 'header', header: 'x-key' }, routes: [{ method: 'POST', path: 'v1/x' }] };",
    'bad-route.js': "export default { apiVersion: 1, id: 'broken', upstream: 'https://api.broken.test', auth: { kind: 'header', header: 'x-key' }, routes: [{ method: 'POST', path: '../admin' }] };",
    'bad-method.js': "export default { apiVersion: 1, id: 'broken', upstream: 'https://api.broken.test', auth: { kind: 'header', header: 'x-key' }, routes: [{ method: 'TRACE', path: 'v1/x' }] };",
    'empty-allow.js': "export default { apiVersion: 1, id: 'broken', upstream: 'https://api.broken.test', auth: { kind: 'header', header: 'x-key' }, routes: [] };",
    'bad-id.js': "export default { apiVersion: 1, id: 'Broken Provider', upstream: 'https://api.broken.test', auth: { kind: 'header', header: 'x-key' }, routes: [{ method: 'POST', path: 'v1/x' }] };",
    'no-default.js': "export const provider = { id: 'broken' };",
    'syntax-error.js': 'export default { apiVersion: 1, id: ',
  };
  for (const [file, source] of Object.entries(variants)) {
    const dir = providersDir(t, { [file]: source });
    const err = await t.throwsAsync(startApp(t, { env: { KEYWARD_PROVIDERS_DIR: dir } }), undefined, file);
    t.true(err?.message.includes(file), `${file}: ${err?.message}`);
    t.regex(err?.message ?? '', /^provider /, file);
  }
  // A folder file claiming a built-in's id, without `replaces`.
  const dup = providersDir(t, { 'openai-again.js': "export default { apiVersion: 1, id: 'openai', upstream: 'https://api.openai.com', auth: { kind: 'header', header: 'authorization' }, routes: [{ method: 'POST', path: 'v1/x' }] };" });
  const err = await t.throwsAsync(startApp(t, { env: { KEYWARD_PROVIDERS_DIR: dup } }));
  t.regex(err?.message ?? '', /openai-again\.js: `id` "openai" is a built-in provider's: choose another id, or declare `replaces: "openai"`/);
});

test('the built server exits non-zero at start-up on a malformed provider file, saying which', async (t) => {
  const dir = providersDir(t, { 'zz-broken.js': "export default { apiVersion: 1, id: 'broken', upstream: 'https://api.broken.test', allow: [{ method: 'POST', path: 'v1/x' }] };" });
  const started = spawnServer(t, { KEYWARD_DATA_DIR: tempDir(t), KEYWARD_PROVIDERS_DIR: dir });
  const err = await t.throwsAsync(started);
  t.regex(err?.message ?? '', /server exited with 1/);
  t.regex(err?.message ?? '', /zz-broken\.js/);
  t.regex(err?.message ?? '', /`auth` is required/);
});

test.serial('an added middleware file works with no code change: an IP allow-list that lets 127.0.0.1 through', async (t) => {
  const s = await gateway(t, { ips: '10.1.2.3, 127.0.0.1', env: { KEYWARD_PLUGINS_DIR: pluginsDir(t, ['ipallow']), KEYWARD_PLUGINS: 'ipallow,logging' } });
  const r = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT });
  t.is(r.status, 200);
  t.is(s.fake.received.length, 1);
  t.is(await used(s), 1, 'quota (a built-in, found in the package folder) still counts');
  // logging, also built in, still logs the request.
  t.true(s.app.logs.some((l) => l.message === 'proxy request' && (l as any).httpRequest?.status === 200));
});

test.serial('the IP allow-list refuses an address it does not list: 403 ip_not_allowed, nothing forwarded, nothing counted', async (t) => {
  const s = await gateway(t, { ips: '10.1.2.3', env: { KEYWARD_PLUGINS_DIR: pluginsDir(t, ['ipallow']), KEYWARD_PLUGINS: 'ipallow,logging' } });
  for (let i = 0; i < 3; i++) {
    const r = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT });
    t.is(r.status, 403);
    t.deepEqual(Object.keys(r.body), ['error']);
    t.is(r.body.error.type, 'permission');
    t.is(r.body.error.code, 'ip_not_allowed');
    t.regex(String(r.headers['x-keyward-request-id']), /^req_/);
  }
  // auth still runs first: no token is 401, not the plugin's 403.
  const anon = await request(s.url, { body: CHAT });
  t.is(anon.status, 401);
  t.is(anon.body.error.code, 'invalid_token');
  t.is(s.fake.received.length, 0);
  t.is(await used(s), 0);
});

test.serial('auth runs first and quota last whatever KEYWARD_PLUGINS lists; an older list naming them, in any order, starts with one warning', async (t) => {
  // The value an older configuration may hold: the core's auth and quota named among the plugins, out of order.
  const env = { KEYWARD_PLUGINS_DIR: pluginsDir(t, ['ipallow', 'probe']), KEYWARD_PLUGINS: 'quota,probe,ipallow,auth,logging' };
  const refused = await gateway(t, { ips: '10.1.2.3', env });
  const warnings = refused.app.logs.filter((l) => /^KEYWARD_PLUGINS names /.test(String(l.message)));
  t.is(warnings.length, 1, 'one warning line');
  t.regex(String(warnings[0]?.message), /^KEYWARD_PLUGINS names quota, auth: core stages, always on and not configured there; ignored/);
  t.deepEqual(refused.app.config.plugins, ['probe', 'ipallow', 'logging'], 'the optional plugins only');
  const r = await request(refused.url, { headers: { 'x-proxy-token': refused.token }, body: CHAT });
  t.is(r.status, 403);
  t.is(r.body.error.code, 'ip_not_allowed');
  t.is(refused.fake.received.length, 0);
  t.is(await used(refused), 0, 'quota, listed first, still ran after the refusing plugin: nothing counted');
  const anon = await request(refused.url, { body: CHAT });
  t.is(anon.status, 401, 'auth, listed fourth, still ran first');
  const probes = refused.app.logs.filter((l) => l.message === 'probe').map((l) => (l as any).probe);
  t.deepEqual(probes.filter((p) => p.hook === 'access'), [{ hook: 'access', auth: true, quota: false, forwarded: false, raw: false }], 'the probe ran once (not for the 401), after auth, before quota, without req/res');
  t.deepEqual(probes.filter((p) => p.hook === 'log').map((p) => p.status).sort(), [401, 403], 'log runs for refusals too');

  const allowed = await gateway(t, { ips: '127.0.0.1', env });
  const ok = await request(allowed.url, { headers: { 'x-proxy-token': allowed.token }, body: CHAT });
  t.is(ok.status, 200);
  t.is(ok.headers['x-keyward-quota-remaining'], '9999');
  t.is(await used(allowed), 1);
  const okProbes = allowed.app.logs.filter((l) => l.message === 'probe').map((l) => (l as any).probe);
  t.deepEqual(okProbes, [
    { hook: 'access', auth: true, quota: false, forwarded: false, raw: false },
    { hook: 'log', status: 200, forwarded: true },
  ]);
  // The same plugins listed as they are now (optional ones only): the same order, and no warning.
  const current = await gateway(t, { ips: '127.0.0.1', env: { ...env, KEYWARD_PLUGINS: 'probe,ipallow,logging' } });
  t.is((await request(current.url, { headers: { 'x-proxy-token': current.token }, body: CHAT })).status, 200);
  t.deepEqual(current.app.logs.filter((l) => l.message === 'probe').map((l) => (l as any).probe), okProbes);
  t.false(current.app.logs.some((l) => /^KEYWARD_PLUGINS names /.test(String(l.message))));
});

test.serial('a middleware that rejects its configuration stops start-up, naming the plugin and the problem', async (t) => {
  const dir = pluginsDir(t, ['ipallow']);
  const missing = await withEnv({ ACME_ALLOWED_IPS: undefined }, () => t.throwsAsync(startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'ipallow,logging' } })));
  t.regex(missing?.message ?? '', /ipallow/);
  t.regex(missing?.message ?? '', /ACME_ALLOWED_IPS must list/);
  const bad = await withEnv({ ACME_ALLOWED_IPS: '127.0.0.1,not-an-ip' }, () => t.throwsAsync(startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'ipallow,logging' } })));
  t.regex(bad?.message ?? '', /ipallow.*"not-an-ip" is not an IPv4 address/);
});

test('no KEYWARD_PLUGINS value removes auth, budget or quota; a plugin that exists nowhere, or takes a core stage\'s name, refuses to start', async (t) => {
  for (const plugins of ['none', 'logging', 'quota,logging']) {
    const s = await gateway(t, { env: { KEYWARD_PLUGINS: plugins, KEYWARD_FREE_PROXY_REQUESTS: '1' } });
    const anon = await request(s.url, { body: CHAT });
    t.is(anon.status, 401, `${plugins}: auth is on`);
    const ok = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT });
    t.is(ok.status, 200, plugins);
    t.is(ok.headers['x-keyward-quota-remaining'], '0', `${plugins}: quota is on`);
    t.is((await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT })).status, 429, `${plugins}: and refuses past the month's requests`);
    t.is(s.app.logs.filter((l) => l.message === 'proxy request').length, plugins === 'none' ? 0 : 3, `${plugins}: logging runs only when listed`);
    // The core's stages, all of them, in their one order; the listed plugins in between.
    const stages = s.app.server.container.resolve<Pipeline>(Symbols.Pipeline).stages.map((stage) => stage.name);
    t.deepEqual(stages, ['abuse', 'auth', 'route', 'scopes', 'body', 'models', 'tools', ...(plugins === 'none' ? [] : ['logging']),
      'rate', 'concurrency', 'max_requests', 'tokens_per_minute', 'budget', 'quota', 'admit'], plugins);
  }
  const missing = await t.throwsAsync(startApp(t, { env: { KEYWARD_PLUGINS: 'no-such-plugin-xyz,logging' } }));
  t.regex(missing?.message ?? '', /no-such-plugin-xyz/);
  // A plugin file of its own name whose module calls itself after a core stage: refused, whatever its priority.
  for (const name of ['auth', 'quota', 'rate', 'admit']) {
    const dir = tempDir(t, 'keyward-plugins-');
    writeFileSync(path.join(dir, 'impostor.js'), `export default { apiVersion: 1, name: '${name}', priority: 400, create() { return { access() {} }; } };`);
    const err = await t.throwsAsync(startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'impostor' } }), undefined, name);
    t.regex(err?.message ?? '', new RegExp(`^plugin ${name}: "${name}" is the name of a core stage`), name);
  }
});

test('KEYWARD_QUOTA=off turns the quota stage off on purpose (one warning); a typo in it is refused', async (t) => {
  const typo = await t.throwsAsync(startApp(t, { env: { KEYWARD_QUOTA: 'of' } }));
  t.regex(typo?.message ?? '', /^KEYWARD_QUOTA: expected one of on, off/);
  // Unmetered on purpose: nothing is counted, whether the (older) KEYWARD_PLUGINS names quota or not.
  for (const plugins of ['logging', 'auth,quota,logging']) {
    const s = await gateway(t, { env: { KEYWARD_PLUGINS: plugins, KEYWARD_QUOTA: 'off', KEYWARD_FREE_PROXY_REQUESTS: '1' } });
    for (let i = 0; i < 3; i++) {
      const r = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT });
      t.is(r.status, 200, plugins);
      t.is(r.headers['x-keyward-quota-remaining'], undefined, plugins);
    }
    t.is(s.app.logs.filter((l) => l.message === 'KEYWARD_QUOTA=off: the quota stage is off, proxy requests are not limited per month').length, 1, plugins);
    t.is((await request(s.url, { body: CHAT })).status, 401, `${plugins}: auth is still on`);
  }
});

test.serial('a plugin file named auth, quota or budget in KEYWARD_PLUGINS_DIR stops start-up naming the file; the core\'s own stages are what run', async (t) => {
  // An "auth" that lets anyone in: exactly what a stray file must never be able to do.
  const letEveryoneIn = "export default { apiVersion: 1, name: 'auth', onRequest(ctx) { ctx.auth = { token: { id: 'tok_x', scopes: {} }, credential: { id: 'cred_x', orgId: 'org_x', provider: 'openai' } }; } };";
  const meterNothing = "export default { apiVersion: 1, name: 'quota', onRequest() {} };";
  const capNothing = "export default { apiVersion: 1, name: 'budget', onRequest() {} };";
  for (const [file, source] of [['auth.js', letEveryoneIn], ['quota.js', meterNothing], ['auth.mjs', letEveryoneIn], ['Quota.js', meterNothing], ['budget.js', capNothing]]) {
    const dir = pluginsDir(t, ['ipallow']);
    writeFileSync(path.join(dir, file!), source!);
    // Listed or not: its presence alone is refused.
    for (const plugins of ['auth,quota,logging', 'ipallow,logging']) {
      const err = await withEnv({ ACME_ALLOWED_IPS: '127.0.0.1' }, () => t.throwsAsync(startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: plugins } })));
      t.true(err?.message.includes(path.join(dir, file!)), `${file}: ${err?.message}`);
      t.regex(err?.message ?? '', /KEYWARD_PLUGINS_DIR/, file);
    }
  }
  // The same folder without the stray file starts, and the core's auth refuses a missing token.
  const s = await gateway(t, { ips: '127.0.0.1', env: { KEYWARD_PLUGINS_DIR: pluginsDir(t, ['ipallow']), KEYWARD_PLUGINS: 'ipallow,logging' } });
  t.is((await request(s.url, { body: CHAT })).status, 401);
  t.is((await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT })).status, 200);
  t.is(await used(s), 1);
});

test.serial('plugins are handed no secret: host.config holds neither the admin token nor the local keys', async (t) => {
  const kek = randomBytes(32);
  const previous = randomBytes(32);
  // A plugin's own settings may hold a secret of its own: it reaches that plugin's create, never the shared host.
  const pluginSecret = `plugin-secret-${randomBytes(8).toString('hex')}`;
  const settings = path.join(tempDir(t), 'plugins.json');
  writeFileSync(settings, JSON.stringify({ hostprobe: { upstream_key: pluginSecret } }));
  const s = await gateway(t, {
    env: { KEYWARD_PLUGINS_DIR: pluginsDir(t, ['hostprobe']), KEYWARD_PLUGINS: 'hostprobe,logging', KEYWARD_LOCAL_KEK: kek.toString('base64'), KEYWARD_LOCAL_KEK_PREVIOUS: previous.toString('base64'), KEYWARD_PLUGIN_CONFIG: settings },
  });
  const host = (globalThis as any).keywardProbedHost;
  t.truthy(host);
  const config = host.config as Record<string, unknown>;
  for (const secret of ['adminToken', 'localKek', 'localKekPrevious']) t.false(secret in config, secret);
  // Nor the core's services: a plugin resolves no token, takes no quota, reserves no spend.
  for (const core of ['tokens', 'quota', 'spend']) t.false(core in host, core);
  t.deepEqual(Object.keys(host.providers), ['keyQueryParams']);
  const seen = JSON.stringify(host, (_k, v) => (Buffer.isBuffer(v) ? v.toString('base64') : v));
  for (const value of [ADMIN_TOKEN, kek.toString('base64'), previous.toString('base64'), kek.toString('hex'), pluginSecret]) t.false(seen.includes(value));
  t.false('pluginSettings' in config);
  t.false(Object.values(config).some((v) => Buffer.isBuffer(v) || v instanceof Uint8Array), 'no key material of any kind');
  // What a plugin does need is there (logging reads gcpProject), as a frozen copy.
  t.is(config.freeProxyRequests, s.app.config.freeProxyRequests);
  t.true('gcpProject' in config);
  t.true(Object.isFrozen(config));
  t.is(s.app.config.adminToken, ADMIN_TOKEN, 'the server itself still has it');
  // An allow-list: a setting added to Config later (a secret, say) stays out until someone names it.
  t.false('metricsToken' in pluginConfig({ ...s.app.config, metricsToken: 'later-secret' } as Config));
});

test('a plugin whose log hook throws (or rejects) does not affect the response, nor the plugins after it', async (t) => {
  const s = await gateway(t, { env: { KEYWARD_PLUGINS_DIR: pluginsDir(t, ['explode']), KEYWARD_PLUGINS: 'explode,logging' } });
  for (let i = 0; i < 4; i++) {
    const stream = i % 2 === 1;
    const r = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: JSON.stringify({ model: 'gpt-test', stream, messages: [] }) });
    t.is(r.status, 200);
    if (stream) t.true(r.text.endsWith('data: [DONE]\n\n'));
    else t.is(r.body.object, 'chat.completion');
  }
  // A refusal's log hook explodes too, and the refusal still arrives intact.
  const refused = await request(s.url, { body: CHAT });
  t.is(refused.status, 401);
  t.is(refused.body.error.code, 'invalid_token');
  await quiet(s.app);
  const failures = s.app.logs.filter((l) => l.message === 'plugin log failed');
  t.is(failures.length, 5);
  t.true(failures.every((l) => l.plugin === 'explode'));
  t.is(s.app.logs.filter((l) => l.message === 'proxy request').length, 5, 'logging, after explode, ran every time');
  t.is(await used(s), 4);
});

test('a plugin whose access throws a plain Error refuses with 500 internal, never forwards and never leaks its message', async (t) => {
  const s = await gateway(t, { env: { KEYWARD_PLUGINS_DIR: pluginsDir(t, ['crash']), KEYWARD_PLUGINS: 'crash,logging' } });
  const r = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT });
  t.is(r.status, 500);
  t.deepEqual(r.body, { error: { type: 'internal', code: 'internal', message: 'Internal error.' } });
  t.false(r.text.includes('secret-looking'));
  t.is(s.fake.received.length, 0);
  t.is(await used(s), 0);
});
