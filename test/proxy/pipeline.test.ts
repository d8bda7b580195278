/**
 * The pipeline of stages (src/gateway/pipeline/pipeline.ts) as an operator sees it:
 * plugin files run by priority whatever KEYWARD_PLUGINS order (ties keep it);
 * `undo` runs in reverse for the stages that ran when a later one refuses or
 * the caller leaves before forwarding, and rate, max_requests and quota give
 * their units back; `responseHead` adds headers to proxied responses and
 * refusals; a plugin's KEYWARD_PLUGIN_CONFIG section is checked against its
 * TypeBox schema at start-up (the error names the file and the field), and so
 * is its priority; a plugin that declares `body.fields` gets the model from
 * the body with no scope asking for it; the first (onRequest/onDone) form
 * no longer loads.
 *
 * Plugin files are written into a fresh KEYWARD_PLUGINS_DIR per test.
 */
import test, { type ExecutionContext } from 'ava';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { api, createCredential, createOrg, mintToken, startApp, tempDir, type StartOptions, type TestApp } from '../support/app.js';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.js';
import { eventually as waitFor } from '../support/wait.js';
import { request, type Reply } from '../support/request.js';

const CHAT = (model = 'gpt-test') => JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] });

/** A plugins folder holding `files` (name → source). */
function pluginsDir(t: ExecutionContext, files: Record<string, string>): string {
  const dir = tempDir(t, 'keyward-plugins-');
  for (const [name, source] of Object.entries(files)) writeFileSync(path.join(dir, `${name}.js`), source);
  return dir;
}

/** A plugin whose hooks each log `{ stage, hook }`; `access` may be replaced. */
function recorder(name: string, priority: number, access = ''): string {
  return `export default {
  apiVersion: 1,
  name: '${name}',
  priority: ${priority},
  create(host) {
    const note = (hook, ctx) => host.logger.info({ stage: '${name}', hook, status: ctx.status, forwarded: ctx.forwarded }, 'stage hook');
    return {
      ${access || "access(ctx) { note('access', ctx); },"}
      undo(ctx) { note('undo', ctx); },
      log(ctx) { note('log', ctx); },
    };
  },
};`;
}

interface Setup {
  app: TestApp;
  fake: FakeProvider;
  org: { id: string; token: string };
  token: string;
  url: string;
}

async function gateway(t: ExecutionContext, options: StartOptions, scopes: Record<string, unknown> = {}): Promise<Setup> {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { ...options, env: { KEYWARD_UPSTREAM_OPENAI: fake.url, ...options.env } });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-pipeline-test-key-0123456789');
  const { token } = await mintToken(app, org, cred, '15m', scopes);
  return { app, fake, org, token, url: `${app.url}/v1/proxy/v1/chat/completions` };
}

const used = async (s: Setup): Promise<number> => (await api(s.app, 'GET', '/v1/usage', { token: s.org.token })).body.proxy_requests.used;
const hooks = (s: Setup) => s.app.logs.filter((l) => l.message === 'stage hook').map((l) => `${l.stage}.${l.hook}`);

/** Hooks that run when a response closes: real events, waited for with a generous bound (a busy machine is slow). */
const eventually = (check: () => boolean | Promise<boolean>): Promise<number> => waitFor(check, 'the hooks ran');

test('plugins run by priority whatever KEYWARD_PLUGINS order; equal priorities keep the listed order', async (t) => {
  const dir = pluginsDir(t, { late: recorder('late', 350), peer2: recorder('peer2', 400), peer1: recorder('peer1', 400), early: recorder('early', 450) });
  const s = await gateway(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'late,peer2,peer1,early,logging' } });
  const r = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT() });
  t.is(r.status, 200);
  await eventually(() => hooks(s).filter((h) => h.endsWith('.log')).length === 4);
  t.deepEqual(hooks(s), ['early.access', 'peer2.access', 'peer1.access', 'late.access', 'early.log', 'peer2.log', 'peer1.log', 'late.log']);
  t.is(await used(s), 1);
});

test('a later refusal: the stages that ran undo in reverse order, the refuser and those after it do not; nothing counts', async (t) => {
  const refuse = "access() { throw new host.GatewayError(403, 'permission', 'refused_here', 'No.'); },";
  const dir = pluginsDir(t, { first: recorder('first', 450), second: recorder('second', 400), refuser: recorder('refuser', 350, refuse), after: recorder('after', 300) });
  const s = await gateway(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'after,refuser,second,first' } });
  const r = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT() });
  t.is(r.status, 403);
  t.is(r.body.error.code, 'refused_here');
  await eventually(() => hooks(s).filter((h) => h.endsWith('.log')).length === 4);
  t.deepEqual(hooks(s).filter((h) => !h.endsWith('.log')), ['first.access', 'second.access', 'second.undo', 'first.undo']);
  t.is(s.fake.received.length, 0);
  t.is(await used(s), 0);
  // A 401 stops at auth: no plugin's access ran, so none undoes anything.
  const before = hooks(s).length;
  t.is((await request(s.url, { body: CHAT() })).status, 401);
  await eventually(() => hooks(s).length === before + 4);
  t.deepEqual(hooks(s).slice(before).sort(), ['after.log', 'first.log', 'refuser.log', 'second.log']);
});

test.serial('a caller who leaves before forwarding: every stage that ran gives back (plugin undo, rate_limit, max_requests, quota)', async (t) => {
  const stall = `async access(ctx) {
        note('access', ctx);
        const stall = globalThis.keywardStall;
        if (stall) { stall.entered(); await stall.released; }
      },`;
  const dir = pluginsDir(t, { stall: recorder('stall', 300, stall) });
  // One of everything: a unit that is not given back makes the second request a 429.
  const s = await gateway(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'stall,logging', KEYWARD_FREE_PROXY_REQUESTS: '1' } }, { max_requests: 1, rate_limit: 1 });
  let entered!: () => void;
  let release!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  (globalThis as any).keywardStall = { entered, released: new Promise<void>((r) => (release = r)) };
  t.teardown(() => delete (globalThis as any).keywardStall);

  const body = CHAT();
  const req = http.request(s.url, { method: 'POST', agent: false, headers: { 'x-proxy-token': s.token, 'content-type': 'application/json', 'content-length': String(body.length) } });
  req.on('error', () => {});
  req.end(body);
  await inside;
  req.destroy();
  await eventually(() => s.app.server.http.inflightRequests === 0);
  t.is(s.app.server.http.inflightRequests, 0, 'the gateway saw the caller leave');
  delete (globalThis as any).keywardStall;
  release();
  await eventually(() => hooks(s).includes('stall.log'));
  t.deepEqual(hooks(s), ['stall.access', 'stall.undo', 'stall.log']);
  t.like(s.app.logs.find((l) => l.message === 'stage hook' && l.hook === 'log'), { status: 499, forwarded: false });
  t.is(s.fake.received.length, 0);
  t.is(await used(s), 0);

  const r = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT() });
  t.is(r.status, 200, `the rate unit, the token's one request and the org's one request all came back: ${JSON.stringify(r.body)}`);
  t.is(r.headers['x-keyward-quota-remaining'], '0');
  t.is(s.fake.received.length, 1);
  t.is(await used(s), 1);
});

test('responseHead adds headers to a proxied response and to a refusal; a header a stage may not set is refused, the response intact', async (t) => {
  const stamp = `export default {
  apiVersion: 1,
  name: 'stamp',
  priority: 400,
  create() {
    return { responseHead(ctx, head) { head.setHeader('X-Acme-Stamp', head.status + ' ' + (ctx.tokenId ? 'token' : 'anonymous')); } };
  },
};`;
  const framing = "export default { apiVersion: 1, name: 'framing', priority: 450, create() { return { responseHead(ctx, head) { head.setHeader('content-length', '1'); } }; } };";
  const s = await gateway(t, { env: { KEYWARD_PLUGINS_DIR: pluginsDir(t, { stamp, framing }), KEYWARD_PLUGINS: 'framing,stamp,logging' } });
  const ok = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT() });
  t.is(ok.status, 200);
  t.is(ok.body.object, 'chat.completion', 'the body is whole: the stage did not change its length');
  t.is(ok.headers['x-acme-stamp'], '200 token');
  t.is(ok.headers['x-keyward-quota-remaining'], '9999', 'the quota stage\'s own responseHead');
  const refused = await request(`${s.app.url}/v1/proxy/v1/not-a-route`, { headers: { 'x-proxy-token': s.token }, body: CHAT() });
  t.is(refused.status, 403);
  t.is(refused.headers['x-acme-stamp'], '403 token');
  t.is(refused.headers['x-keyward-quota-remaining'], undefined, 'quota never ran for it');
  const anonymous = await request(s.url, { body: CHAT() });
  t.is(anonymous.status, 401);
  t.is(anonymous.headers['x-acme-stamp'], '401 anonymous');
  t.is(s.app.logs.filter((l) => l.message === 'plugin responseHead failed' && l.plugin === 'framing').length, 3);
});

/** Refuses the models its configuration denies: reads ctx.model from the body, which it declares. */
const MODEL_GUARD = `export default {
  apiVersion: 1,
  name: 'modelguard',
  priority: 450,
  body: { fields: ['model'] },
  configSchema: (Type) => Type.Object({ deny: Type.Array(Type.String({ minLength: 1 })), code: Type.String({ default: 'model_denied' }) }),
  create(host, config) {
    const deny = new Set(config.deny);
    return {
      access(ctx) {
        const field = ctx.bodyFields ? ctx.bodyFields.get('model') : undefined;
        host.logger.info({ modelguard: { model: ctx.model ?? null, field: field ?? null } }, 'modelguard');
        if (ctx.model !== undefined && deny.has(ctx.model)) throw new host.GatewayError(403, 'permission', config.code, 'This model is denied here.');
      },
    };
  },
};`;

function configFile(t: ExecutionContext, content: unknown): string {
  const file = path.join(tempDir(t, 'keyward-plugin-config-'), 'plugins.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

test('a plugin that declares body.fields gets the body\'s model, for a token with no models scope', async (t) => {
  const dir = pluginsDir(t, { modelguard: MODEL_GUARD });
  const s = await gateway(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'modelguard,logging', KEYWARD_PLUGIN_CONFIG: configFile(t, { modelguard: { deny: ['gpt-denied'] } }) } });
  const ok = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT('gpt-test') });
  t.is(ok.status, 200);
  t.is(s.fake.received.at(-1)!.body, CHAT('gpt-test'), 'the scanned body reaches the provider byte for byte');
  const denied = await request(s.url, { headers: { 'x-proxy-token': s.token }, body: CHAT('gpt-denied') });
  t.is(denied.status, 403);
  t.is(denied.body.error.code, 'model_denied', 'the schema\'s default applied');
  t.is(s.fake.received.length, 1);
  // A bodiless read is not scanned: no model, and it passes.
  t.is((await request(`${s.app.url}/v1/proxy/v1/models`, { method: 'GET', headers: { 'x-proxy-token': s.token } })).status, 200);
  const seen = s.app.logs.filter((l) => l.message === 'modelguard').map((l) => l.modelguard);
  t.deepEqual(seen, [
    { model: 'gpt-test', field: { kind: 'string', value: 'gpt-test' } },
    { model: 'gpt-denied', field: { kind: 'string', value: 'gpt-denied' } },
    { model: null, field: null },
  ]);
  t.is(await used(s), 2);
});

test('KEYWARD_PLUGIN_CONFIG: a section failing the plugin\'s schema stops start-up naming the file and the field, never the value', async (t) => {
  const dir = pluginsDir(t, { modelguard: MODEL_GUARD });
  const file = path.join(dir, 'modelguard.js');
  const start = (config: string | undefined) => startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'modelguard', ...(config ? { KEYWARD_PLUGIN_CONFIG: config } : {}) } });
  const wrongType = await t.throwsAsync(start(configFile(t, { modelguard: { deny: ['gpt-x', 7] } })));
  t.true(wrongType?.message.includes(file), wrongType?.message);
  t.regex(wrongType?.message ?? '', /KEYWARD_PLUGIN_CONFIG "modelguard"\/deny\/1: Expected string/);
  t.notRegex(wrongType?.message ?? '', /\n/, 'one line');
  const missing = await t.throwsAsync(start(undefined));
  t.true(missing?.message.includes(file), missing?.message);
  t.regex(missing?.message ?? '', /"modelguard"\/deny: Expected required property/);
  const secret = await t.throwsAsync(start(configFile(t, { modelguard: { deny: 'sk-live-secret-looking-value' } })));
  t.regex(secret?.message ?? '', /\/deny: Expected array/);
  t.false(secret?.message.includes('sk-live-secret-looking-value'));
  // A section for a plugin that is not listed (a typo) and a file that is not JSON stop start-up too.
  const typo = await t.throwsAsync(start(configFile(t, { modelguard: { deny: [] }, modelgaurd: { deny: [] } })));
  t.regex(typo?.message ?? '', /^plugin modelgaurd: KEYWARD_PLUGIN_CONFIG configures it, but KEYWARD_PLUGINS does not list it/);
  const notJson = await t.throwsAsync(start(configFile(t, '{"modelguard": ')));
  t.regex(notJson?.message ?? '', /^KEYWARD_PLUGIN_CONFIG: expected a readable JSON file \(not JSON\)/);
  const absent = await t.throwsAsync(start(path.join(dir, 'no-such.json')));
  t.regex(absent?.message ?? '', /^KEYWARD_PLUGIN_CONFIG: expected a readable JSON file \(ENOENT\)/);
  // The same plugin with a valid section starts.
  await t.notThrowsAsync(start(configFile(t, { modelguard: { deny: [] } })));
});

test('an operator plugin\'s priority outside 300..500 stops start-up naming its file', async (t) => {
  for (const [name, priority] of [['tooearly', '650'], ['beforeauth', '950'], ['afterquota', '50'], ['beside-rate', '299'], ['notanumber', "'high'"]] as const) {
    const dir = pluginsDir(t, { [name]: `export default { apiVersion: 1, name: '${name}', priority: ${priority}, create() { return { access() {} }; } };` });
    const err = await t.throwsAsync(startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: name } }), undefined, name);
    t.true(err?.message.includes(path.join(dir, `${name}.js`)), `${name}: ${err?.message}`);
    t.regex(err?.message ?? '', name === 'notanumber' ? /`priority` must be a number/ : new RegExp(`priority ${priority} is outside 300\\.\\.500`), name);
  }
  // The bounds themselves are allowed.
  const edges = pluginsDir(t, { low: recorder('low', 300), high: recorder('high', 500) });
  await t.notThrowsAsync(startApp(t, { env: { KEYWARD_PLUGINS_DIR: edges, KEYWARD_PLUGINS: 'low,high' } }));
});

test('the first form (a class, or onRequest/onDone) no longer loads: start-up stops naming the file and the form that replaced it', async (t) => {
  const forms = {
    oldclass: `export default class OldStyle {
  name = 'oldclass';
  onRequest(ctx) {}
}`,
    oldobject: "export default { name: 'oldobject', onRequest(ctx) {}, onDone(ctx) {} };",
  };
  const dir = pluginsDir(t, forms);
  for (const name of Object.keys(forms)) {
    const err = await t.throwsAsync(startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: name } }), undefined, name);
    t.true(err?.message.startsWith(`plugin ${name} (${path.join(dir, `${name}.js`)}): the default export must be a middleware plugin: { apiVersion: 1, name, priority, create(host, settings) }`), err?.message);
    t.regex(err?.message ?? '', /the first form \(a class, or onRequest\/onDone\) is no longer loaded/);
  }
});
