/**
 * What the console's forms and its "use this token" panel are built from, declared in the provider files:
 * every shipped provider gives each credential field a plain label and help line, and an `sdk` block whose
 * templates use only {proxy}, {token} and its plain fields (so filling them can never print a secret
 * field); README's "Point your agent at Keyward" says the same as the files; malformed declarations stop
 * start-up naming the field; GET /v1/providers serves them.
 */
import 'reflect-metadata';
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { validateProvider, type Provider } from '../../src/catalog/registry.js';
import { placeholders } from '../../src/catalog/sdk-setup.js';
import { api, createOrg, ROOT, startApp } from '../support/app.js';

async function shipped(): Promise<Provider[]> {
  // The built files (npm run build): a provider's own modules (providers/lib/) are imported as `.js`, which only the
  // build (or a TypeScript loader) resolves.
  const dir = path.join(ROOT, 'dist', 'providers');
  const files = readdirSync(dir).filter((f) => f.endsWith('.js')).sort();
  return Promise.all(files.map(async (f) => validateProvider(f.replace(/\.js$/, '.ts'), (await import(pathToFileURL(path.join(dir, f)).href)).default)));
}

test('every shipped provider labels and explains each credential field in plain words and says how its SDKs reach it', async (t) => {
  const providers = await shipped();
  t.true(providers.length >= 15);
  for (const p of providers) {
    const plain = p.fields.filter((f) => !f.secret).map((f) => f.name);
    for (const f of p.fields) {
      const raw = p.credential.fields[f.name]!;
      t.is(typeof raw.label, 'string', `${p.id}.${f.name} declares a label`);
      t.is(typeof raw.help, 'string', `${p.id}.${f.name} declares help`);
      // Plain words: no API names (backticks, underscores) in what a form shows.
      t.notRegex(raw.label!, /[`_]|^[a-z]/, `${p.id}.${f.name} label`);
      t.notRegex(raw.help!, /`/, `${p.id}.${f.name} help`);
      t.regex(raw.help!, /\.$/, `${p.id}.${f.name} help is a sentence`);
    }
    t.true((p.sdk?.length ?? 0) > 0, `${p.id} declares sdk`);
    let token = 0;
    for (const e of p.sdk!) {
      for (const template of [...Object.values(e.env ?? {}), e.code ?? '']) {
        for (const ph of placeholders(template)) {
          t.true(['proxy', 'token', ...plain].includes(ph), `${p.id} ${e.name}: {${ph}}`);
          if (ph === 'token') token++;
        }
      }
      // A base URL is the proxy plus the provider's own base path: it must lead to one of its routes.
      for (const [name, value] of Object.entries(e.env ?? {})) {
        if (!value.startsWith('{proxy}')) continue;
        const base = value.slice('{proxy}'.length).replace(/^\//, '');
        t.true(p.routes.some((r) => r.path.startsWith(base)), `${p.id} ${name}: ${value} leads to no route`);
      }
    }
    t.true(token > 0, `${p.id} hands over the token`);
  }
});

test('README\'s "Point your agent at Keyward" and the provider files give the same variables', async (t) => {
  const byId = Object.fromEntries((await shipped()).map((p) => [p.id, p]));
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Point your agent at Keyward'));
  const vars = Object.fromEntries([...section.slice(0, section.indexOf('\n## ', 5)).matchAll(/^([A-Z_]+)=(\S+)/gm)].map((m) => [m[1]!, m[2]!]));
  const fill = (v: string) => v.replace('{proxy}', 'https://keyward.example.com/v1/proxy').replace('{token}', 'ptok_…');
  for (const [id, name] of [['openai', 'OPENAI_BASE_URL'], ['openai', 'OPENAI_API_KEY'], ['anthropic', 'ANTHROPIC_BASE_URL'], ['anthropic', 'ANTHROPIC_API_KEY']] as const) {
    const declared = byId[id]!.sdk!.flatMap((e) => Object.entries(e.env ?? {})).find(([k]) => k === name)?.[1];
    t.is(fill(declared ?? ''), vars[name], `${id} ${name}`);
  }
});

test('a malformed label, help or sdk block stops start-up naming the field', (t) => {
  const base = { id: 'broken', upstream: 'https://api.broken.test', auth: { kind: 'header', header: 'x-key' }, routes: [{ method: 'POST', path: 'v1/x' }] };
  const field = (extra: Record<string, unknown>) => ({ credential: { fields: { api_key: { secret: true, ...extra }, region: { pattern: /^[a-z]+$/ } } } });
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [field({ label: 'The `api_key`' }), /credential field "api_key": `label` must be plain words/],
    [field({ label: 'x'.repeat(41) }), /`label` must be plain words of at most 40/],
    [field({ help: 42 }), /`help` must be plain words of at most 200/],
    [field({ help: 'line\nbreak' }), /`help` must be plain words/],
    [{ sdk: [] }, /`sdk` must be an array of 1 to 8/],
    [{ sdk: [{ name: 'x' }] }, /`sdk\[0\]` needs `env` or `code`/],
    [{ sdk: [{ name: 'x', env: { lower: '{token}' } }] }, /"lower" is not an environment variable name/],
    [{ sdk: [{ name: 'x', env: { KEY: '{api_key}' } }] }, /\{api_key\} is not \{proxy\}, \{token\} or a plain credential field/],
    [{ ...field({}), sdk: [{ name: 'x', env: { KEY: '{token}', REGION: '{nope}' } }] }, /\{nope\} is not/],
    [{ sdk: [{ name: 'x', env: { BASE: '{proxy}' } }] }, /must hand over the proxy token/],
    [{ sdk: [{ name: 'x', env: { KEY: '{token}' }, extra: 1 }] }, /unknown key `extra`/],
    [{ sdk: [{ name: 'a `b`', env: { KEY: '{token}' } }] }, /`sdk\[0\]`\.name must be plain words/],
  ];
  for (const [change, message] of cases) {
    const err = t.throws(() => validateProvider('broken.js', { ...base, ...change }), undefined, JSON.stringify(change));
    t.regex(err?.message ?? '', /^provider broken\.js: /);
    t.regex(err?.message ?? '', message);
  }
  // A plain field may fill a template; a file without labels gets the names with spaces.
  const p = validateProvider('fine.js', { ...base, ...field({}), sdk: [{ name: 'SDK', env: { KEY: '{token}', REGION: '{region}' } }] });
  t.deepEqual(p.fields.map((f) => f.label), ['api key', 'region']);
  t.deepEqual(p.sdk, [{ name: 'SDK', env: { KEY: '{token}', REGION: '{region}' } }]);
});

test('GET /v1/providers serves each field\'s label and help and each provider\'s sdk block', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const res = await api(app, 'GET', '/v1/providers', { token: org.token });
  t.is(res.status, 200);
  const byId = Object.fromEntries(res.body.data.map((p: { id: string }) => [p.id, p]));
  t.like(byId.openai.credential_fields[0], { name: 'api_key', label: 'API key' });
  t.deepEqual(byId.openai.sdk, [{ name: 'OpenAI SDKs (Python, Node, …) and the tools built on them', env: { OPENAI_BASE_URL: '{proxy}/v1', OPENAI_API_KEY: '{token}' } }]);
  const bedrock = Object.fromEntries(byId.bedrock.credential_fields.map((f: { name: string }) => [f.name, f]));
  t.like(bedrock.aws_secret_access_key, { label: 'Secret access key', secret: true });
  t.is(byId.bedrock.sdk[0].env.AWS_REGION, '{region}');
  t.truthy(byId.vertex.sdk[0].code);
  for (const p of res.body.data) {
    for (const f of p.credential_fields) {
      t.true(f.label.length > 0 && f.help.length > 0, `${p.id}.${f.name}`);
      t.false(f.label.includes('_'), `${p.id}.${f.name}`);
    }
  }
});
