/**
 * The plugin author's flow, from outside the codebase: `npm pack` the SDK, install the tarball in a scratch
 * folder (no network), write a TypeScript provider (OpenAI-compatible) and a TypeScript middleware against it,
 * type-check them with the repository's tsc, point KEYWARD_PROVIDERS_DIR / KEYWARD_PLUGINS_DIR at them and start
 * the built server (no build of the folder: Node strips the types), then call through both with the official
 * `openai` SDK. The built-in providers are all still there; a folder provider with a built-in's id and no
 * `replaces` stops start-up naming the file and the field.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { api, createCredential, createOrg, mintToken, ROOT, spawnServer, tempDir } from '../support/app.js';
import { startFakeProvider } from '../support/fake-provider.js';

const run = promisify(execFile);
const TSC = path.join(ROOT, 'node_modules/.bin/tsc');

const PROVIDER = `import { defineProvider } from '@keyward/sdk';

// An OpenAI-compatible API: the key as a Bearer token, OpenAI's usage shape, its chat route, priced inline.
export default defineProvider({
  apiVersion: 1,
  id: 'acme-chat',
  name: 'Acme Chat',
  upstream: 'https://api.acme-chat.example',
  auth: { kind: 'header', header: 'authorization' },
  usage: 'openai',
  routes: [{ method: 'POST', path: 'v1/chat/completions' }],
  prices: { 'acme-1': { input: 1, output: 2, maxOutput: 4096, contextWindow: 32768 } },
  pricesAsOf: '2026-11-01',
  pricesSource: 'https://acme-chat.example/pricing',
  sdk: [{ name: 'OpenAI SDKs', env: { OPENAI_BASE_URL: '{proxy}/v1', OPENAI_API_KEY: '{token}' } }],
});
`;

const MIDDLEWARE = `import { defineMiddleware } from '@keyward/sdk';

interface State {
  team: string;
}

// Names the caller's team back on every response; the team is read in access and kept in the plugin's own state.
export default defineMiddleware<State>({
  apiVersion: 1,
  name: 'team-echo',
  priority: 400,
  create(host) {
    return {
      access(ctx) {
        const team = ctx.headers['x-team'];
        if (team === 'blocked') throw new host.GatewayError(403, 'permission', 'team_blocked', 'This team may not use the gateway.');
        ctx.state.team = typeof team === 'string' ? team : 'none';
      },
      responseHead(ctx, head) {
        head.setHeader('x-team-seen', ctx.state.team ?? 'refused-before-access');
      },
    };
  },
});
`;

/** What the SDK's types catch: a misspelt state field and a provider field that is no field. */
const MISTAKES = `import { defineMiddleware, defineProvider } from '@keyward/sdk';
export const m = defineMiddleware<{ team: string }>({
  apiVersion: 1, name: 'x', priority: 400,
  create() { return { access(ctx) { ctx.state.teem = 'a'; } }; },
});
export const p = defineProvider({ apiVersion: 1, id: 'x', upstrem: 'https://x.example', auth: { kind: 'header', header: 'x-key' }, routes: [] });
`;

const TSCONFIG = {
  compilerOptions: { target: 'ES2023', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: [], erasableSyntaxOnly: true, skipLibCheck: false },
};

test('an author packs the SDK, writes a provider and a middleware in TypeScript, and Keyward runs them from their folders beside every built-in', async (t) => {
  const scratch = tempDir(t, 'keyward-author-');
  // The SDK as a tarball, built from sdk/ alone.
  await run('npm', ['pack', '--pack-destination', scratch, '--silent'], { cwd: path.join(ROOT, 'sdk') });
  const tarball = readdirSync(scratch).find((f) => /^keyward-sdk-1\.\d+\.\d+\.tgz$/.test(f));
  t.truthy(tarball, 'npm pack made keyward-sdk-1.x.y.tgz');

  // The author's folder: ESM, the SDK installed from the tarball.
  writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'acme-keyward-plugins', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', path.join(scratch, tarball!)], { cwd: scratch });
  mkdirSync(path.join(scratch, 'providers'));
  mkdirSync(path.join(scratch, 'plugins'));
  writeFileSync(path.join(scratch, 'providers/acme-chat.ts'), PROVIDER);
  writeFileSync(path.join(scratch, 'plugins/team-echo.ts'), MIDDLEWARE);
  writeFileSync(path.join(scratch, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, include: ['providers', 'plugins'] }));
  await t.notThrowsAsync(run(TSC, ['-p', scratch]), 'the provider and the middleware type-check against the installed SDK');

  // The types catch an author's mistakes.
  const wrong = path.join(scratch, 'wrong');
  mkdirSync(wrong);
  writeFileSync(path.join(wrong, 'mistakes.ts'), MISTAKES);
  writeFileSync(path.join(scratch, 'tsconfig.wrong.json'), JSON.stringify({ ...TSCONFIG, include: ['wrong'] }));
  const failed = await t.throwsAsync(run(TSC, ['-p', path.join(scratch, 'tsconfig.wrong.json')])) as (Error & { stdout?: string }) | undefined;
  t.regex(failed?.stdout ?? '', /'teem' does not exist/);
  t.regex(failed?.stdout ?? '', /'upstrem' does not exist/);

  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const server = await spawnServer(t, {
    KEYWARD_DATA_DIR: tempDir(t),
    KEYWARD_PROVIDERS_DIR: path.join(scratch, 'providers'),
    KEYWARD_PLUGINS_DIR: path.join(scratch, 'plugins'),
    KEYWARD_PLUGINS: 'team-echo,logging',
    KEYWARD_UPSTREAM_ACME_CHAT: fake.url,
  });
  const org = await createOrg(server.url);
  // Every built-in provider is still loaded, and the folder's besides.
  const builtins = readdirSync(path.join(ROOT, 'dist/providers')).filter((f) => f.endsWith('.js')).map((f) => f.slice(0, -3));
  const listed = (await api(server.url, 'GET', '/v1/providers', { token: org.token })).body.data.map((p: { id: string }) => p.id).sort();
  t.deepEqual(listed, [...builtins, 'acme-chat'].sort());
  const credential = await createCredential(server.url, org, 'acme-chat', 'sk-acme-secret-0123456789');
  const { token } = await mintToken(server.url, org, credential);
  const client = new OpenAI({ apiKey: token, baseURL: `${server.url}/v1/proxy/v1`, maxRetries: 0 });
  const { data, response } = await client.chat.completions
    .create({ model: 'acme-1', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-team': 'search' } })
    .withResponse();
  t.is(data.choices[0]?.message.content, 'Hello from the', 'the fake upstream\'s answer, through the folder provider');
  t.is(response.headers.get('x-team-seen'), 'search', 'the middleware kept the team in its state from access to responseHead');
  t.is(fake.received.at(-1)?.headers.authorization, 'Bearer sk-acme-secret-0123456789', 'the stored key went upstream, as the provider file says');

  const refused = await client.chat.completions.create({ model: 'acme-1', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-team': 'blocked' } }).catch((err: unknown) => err);
  t.true(refused instanceof OpenAI.PermissionDeniedError);
  t.is((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).code, 'team_blocked');
  t.is(fake.received.length, 1, 'a refused request is never forwarded');
  await server.kill();

  // A folder provider with a built-in's id and no `replaces`: start-up stops, naming the file and the field.
  const clash = path.join(scratch, 'clash');
  mkdirSync(clash);
  writeFileSync(path.join(clash, 'my-openai.ts'), PROVIDER.replace("id: 'acme-chat'", "id: 'openai'"));
  const stopped = await t.throwsAsync(spawnServer(t, { KEYWARD_DATA_DIR: tempDir(t), KEYWARD_PROVIDERS_DIR: clash }));
  t.regex(stopped?.message ?? '', /server exited with 1/);
  t.true(stopped?.message.includes(`provider ${path.join(clash, 'my-openai.ts')}: \`id\` "openai" is a built-in provider's`), stopped?.message);
});
