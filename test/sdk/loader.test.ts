/**
 * Loading plugins as the SDK's contract says: every file declares `apiVersion` (missing or unknown stops start-up
 * naming the file); a providers folder adds to the built-ins, and takes a built-in's id only with `replaces`
 * (logged); `.ts`, `.mts`, `.js` and `.mjs` load as they are; a middleware's hooks get a view of their own whose
 * `state` is the plugin's alone and through which the core's context cannot be reached.
 */
import test from 'ava';
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ProviderLoadError, ProviderRegistry } from '../../src/catalog/registry.js';
import type { Logger } from '../../src/log.js';
import { createCredential, createOrg, mintToken, ROOT, startApp, tempDir } from '../support/app.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { eventually } from '../support/wait.js';

const BUILTIN = path.join(ROOT, 'dist/providers');
const provider = (id: string, more = ''): string =>
  `export default { apiVersion: 1, id: '${id}', upstream: 'https://api.${id}.example', auth: { kind: 'header', header: 'x-${id}-key' }, routes: [{ method: 'POST', path: 'v1/x' }]${more} };\n`;

function folder(t: Parameters<typeof tempDir>[0], files: Record<string, string>): string {
  const dir = tempDir(t, 'keyward-folder-');
  for (const [name, source] of Object.entries(files)) writeFileSync(path.join(dir, name), source);
  return dir;
}

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, debug() {}, info() {}, warn: (_f, m) => void warnings.push(m), error() {}, isLevelEnabled: () => true };
}

test('a folder adds to the built-in providers; .ts (types stripped), .mts, .js and .mjs load as they are', async (t) => {
  const dir = folder(t, {
    'alpha.ts': `import type { ProviderPlugin } from '@keyward/sdk';\nconst id: string = 'alpha';\nexport default { apiVersion: 1, id, upstream: 'https://api.alpha.example', auth: { kind: 'header', header: 'x-alpha-key' }, routes: [{ method: 'POST', path: 'v1/x' }] } satisfies ProviderPlugin;\n`,
    'beta.mts': provider('beta'),
    'gamma.js': provider('gamma'),
    'delta.mjs': provider('delta'),
    'types.d.ts': 'export type Nothing = never;\n',
  });
  const builtins = await ProviderRegistry.load(BUILTIN, {});
  const registry = await ProviderRegistry.load(BUILTIN, {}, { extraDir: dir });
  t.deepEqual(registry.ids(), [...builtins.ids(), 'alpha', 'beta', 'delta', 'gamma'].sort());
  t.true(builtins.ids().length >= 20);
  // The built-in folder itself, or a link to a built-in file, adds nothing (and is no clash).
  t.deepEqual((await ProviderRegistry.load(BUILTIN, {}, { extraDir: BUILTIN })).ids(), builtins.ids());
  const linked = tempDir(t, 'keyward-linked-');
  for (const f of readdirSync(BUILTIN).filter((f) => f.endsWith('.js'))) symlinkSync(path.join(BUILTIN, f), path.join(linked, f));
  writeFileSync(path.join(linked, 'gamma.js'), provider('gamma'));
  t.deepEqual((await ProviderRegistry.load(BUILTIN, {}, { extraDir: linked })).ids(), [...builtins.ids(), 'gamma'].sort());
});

test('apiVersion: a provider file without it, or with one this core does not run, stops start-up naming the file and the field', async (t) => {
  const cases: Array<[string, RegExp]> = [
    [provider('nover').replace('apiVersion: 1, ', ''), /`apiVersion` is missing: expected `apiVersion: 1`/],
    [provider('two').replace('apiVersion: 1', 'apiVersion: 2'), /`apiVersion` 2 is not a plugin API this Keyward runs: expected one of 1/],
    [provider('text').replace('apiVersion: 1', "apiVersion: '1'"), /`apiVersion` "1" is not a plugin API this Keyward runs/],
  ];
  for (const [source, message] of cases) {
    const dir = folder(t, { 'acme.ts': source });
    const err = await t.throwsAsync(ProviderRegistry.load(BUILTIN, {}, { extraDir: dir }), { instanceOf: ProviderLoadError });
    t.true(err?.message.startsWith(`provider ${path.join(dir, 'acme.ts')}: `), err?.message);
    t.regex(err?.message ?? '', message);
  }
});

test('a built-in\'s id is taken only with `replaces`, which is logged; `replaces` must be the file\'s own id and a built-in\'s', async (t) => {
  const clash = folder(t, { 'my-openai.js': provider('openai') });
  const err = await t.throwsAsync(ProviderRegistry.load(BUILTIN, {}, { extraDir: clash }));
  t.is(err?.message, `provider ${path.join(clash, 'my-openai.js')}: \`id\` "openai" is a built-in provider's: choose another id, or declare \`replaces: "openai"\` to take its place`);

  const log = recordingLogger();
  const replacing = folder(t, { 'my-mistral.js': provider('mistral', ", replaces: 'mistral'") });
  const registry = await ProviderRegistry.load(BUILTIN, {}, { extraDir: replacing, log });
  t.is(registry.get('mistral')?.upstream, 'https://api.mistral.example', 'the folder\'s mistral is the one loaded');
  t.is(registry.ids().length, (await ProviderRegistry.load(BUILTIN, {})).ids().length);
  t.deepEqual(log.warnings, [`provider mistral from ${path.join(replacing, 'my-mistral.js')} replaces the built-in provider mistral`]);

  const other = folder(t, { 'x.js': provider('acme', ", replaces: 'openai'") });
  t.regex((await t.throwsAsync(ProviderRegistry.load(BUILTIN, {}, { extraDir: other })))?.message ?? '', /x\.js: `replaces` must be the provider's own `id` \("acme"\)/);
  const nothing = folder(t, { 'y.js': provider('acme', ", replaces: 'acme'") });
  t.regex((await t.throwsAsync(ProviderRegistry.load(BUILTIN, {}, { extraDir: nothing })))?.message ?? '', /y\.js: `replaces` "acme" names no built-in provider/);
});

/** A plugin that writes `mark` into its state in access, and logs what its state and view hold at log time. */
const stateful = (name: string, priority: number, mark: string): string => `export default {
  apiVersion: 1, name: '${name}', priority: ${priority},
  create(host) {
    return {
      access(ctx) {
        ctx.state.seen = [...(ctx.state.seen ?? []), '${mark}'];
      },
      log(ctx) {
        host.logger.info({ plugin: '${name}', seen: ctx.state.seen, keys: Object.keys(ctx.state), auth: 'auth' in ctx, provider: ctx.provider === undefined ? 'hidden' : 'visible', org: typeof ctx.orgId, status: ctx.status }, 'state probe');
      },
    };
  },
};
`;

test('each plugin\'s ctx.state is its own per request; its view reads the request live and never reaches the core\'s context', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const dir = tempDir(t, 'keyward-plugins-');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'first.js'), stateful('first', 450, 'a'));
  writeFileSync(path.join(dir, 'second.ts'), stateful('second', 350, 'b').replace('create(host)', 'create(host: { logger: { info(f: object, m: string): void } })'));
  writeFileSync(path.join(dir, 'nover.js'), 'export default { name: \'nover\', priority: 400, create() { return { log() {} }; } };');
  const refused = await t.throwsAsync(startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'nover' } }));
  t.is(refused?.message, `plugin nover (${path.join(dir, 'nover.js')}): \`apiVersion\` is missing: expected \`apiVersion: 1\`, the plugin API the file is written against (@keyward/sdk)`);

  const app = await startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'first,second', KEYWARD_UPSTREAM_OPENAI: fake.url } });
  const org = await createOrg(app);
  const { token } = await mintToken(app, org, await createCredential(app, org, 'openai', 'sk-state-test-0123456789'));
  for (let i = 0; i < 2; i++) {
    const r = await fetch(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { 'x-proxy-token': token, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
    t.is(r.status, 200);
    await r.text();
  }
  await eventually(() => app.logs.filter((l) => l.message === 'state probe').length === 4, 'both plugins\' log hooks, twice');
  const probes = app.logs.filter((l) => l.message === 'state probe').map(({ plugin, seen, keys, auth, provider, org, status }) => ({ plugin, seen, keys, auth, provider, org, status }));
  const expected = (plugin: string, mark: string) => ({ plugin, seen: [mark], keys: ['seen'], auth: false, provider: 'hidden', org: 'string', status: 200 });
  t.deepEqual(probes.sort((a, b) => String(a.plugin).localeCompare(String(b.plugin))), [expected('first', 'a'), expected('first', 'a'), expected('second', 'b'), expected('second', 'b')],
    'a fresh state per request and per plugin; the view has neither the resolved token nor the provider');
  t.is(fake.received.length, 2);
});
