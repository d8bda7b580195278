/**
 * A credential's fields as its provider declares them, and what they decide:
 *  - an upstream origin from a template whose parameter is a validated plain field
 *    (`regional`, test/support/providers/regional.js): a bad value is a 400 at create, the
 *    signer sees the credential's own origin, KEYWARD_UPSTREAM_<ID> still replaces it;
 *  - a template that names a secret field, a field without a strict pattern, or no field at
 *    all stops start-up naming the file and the parameter;
 *  - the sealed format: a record whose plaintext is a bare key (every record written before)
 *    still opens and serves; several secrets are sealed as one 0x00 0x01 JSON plaintext; an
 *    unknown format version fails closed.
 */
import test from 'ava';
import { api, createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { EXAMPLE_PROVIDERS, providersDir } from '../support/providers-dir.js';
import { request } from '../support/request.js';
import { validateProvider } from '../../src/catalog/registry.js';
import { credentialWire } from '../../src/gateway/upstream/outgoing.js';
import { Envelope } from '../../src/vault/envelope.js';
import { CredentialService } from '../../src/vault/credential-service.js';
import { decodeSecrets, encodeSecrets } from '../../src/vault/secret-encoding.js';
import { Symbols } from '../../src/symbols.js';
import { newId } from '../../src/ids.js';
import type { CredentialStore } from '../../src/store/ports.js';
import path from 'node:path';

const regional = (await import(path.join(EXAMPLE_PROVIDERS, 'regional.js'))).default;
type Seen = { origin: string; path: string; host: string; query: string };
const seen = (): Seen[] => ((globalThis as { __regionalSeen?: Seen[] }).__regionalSeen ??= []);
const CHAT = '{"model":"m","messages":[]}';

test.serial('a template upstream: the region is validated at create, and each credential\'s requests go to its own origin', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['regional']) } });
  const org = await createOrg(app);
  const key = 'sk-regional-0123456789abcdef';
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ provider: 'regional', api_key: key }, 'region'],
    [{ provider: 'regional', api_key: key, region: 'EU-west-1' }, 'region'],
    [{ provider: 'regional', api_key: key, region: 'eu-west-1.evil.test/x' }, 'region'],
    [{ provider: 'regional', api_key: key, region: 'eu-west-1@evil.test' }, 'region'],
    [{ provider: 'regional', api_key: key, region: 42 }, 'region'],
    [{ provider: 'regional', region: 'eu-west-1' }, 'api_key'],
    [{ provider: 'regional', api_key: key, region: 'eu-west-1', zone: 'a' }, 'zone'],
  ];
  for (const [body, param] of bad) {
    const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.error.code, 'invalid_request');
    t.is(r.body.error.param, param, JSON.stringify(body));
    t.false(r.text.includes(key));
  }
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data.length, 0, 'nothing was stored');

  const made = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'regional', api_key: key, region: 'eu-west-1' } });
  t.is(made.status, 201, made.text);
  t.is(made.body.region, 'eu-west-1', 'a plain field is returned');
  const other = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'regional', api_key: `${key}-2`, region: 'us-east-2' } });
  for (const [id, region] of [[made.body.id, 'eu-west-1'], [other.body.id, 'us-east-2']] as const) {
    const tok = await mintToken(app, org, id);
    seen().length = 0;
    // The signer records what it saw, then refuses (x-test-stop): nothing leaves the gateway.
    const r = await request(`${app.url}/v1/proxy/v1/chat/completions?x=1`, { headers: { authorization: `Bearer ${tok.token}`, 'x-test-stop': '1' }, body: CHAT });
    t.is(r.status, 502);
    t.is(r.body.error.code, 'upstream_unreachable');
    t.deepEqual(seen(), [{ origin: `https://api.${region}.regional.test`, path: '/base/v1/chat/completions', host: `api.${region}.regional.test`, query: 'x=1' }]);
  }
  // The signer's error named the key: logged masked, never sent.
  t.true(app.logText().includes('provider signer failed'));
  t.false(app.logText().includes(key));
  t.is((await api(app, 'GET', '/v1/usage', { token: org.token })).body.proxy_requests.used, 0, 'a request the signer refused does not count');
});

test.serial('KEYWARD_UPSTREAM_<ID> still replaces a template\'s whole origin', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['regional']), KEYWARD_UPSTREAM_REGIONAL: fake.url } });
  const org = await createOrg(app);
  const key = 'sk-regional-override-012345';
  const made = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'regional', api_key: key, region: 'eu-west-1' } });
  // Overridden or not, the value must fit the template.
  const bad = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'regional', api_key: key, region: 'nowhere' } });
  t.is(bad.body.error.param, 'region');
  const tok = await mintToken(app, org, made.body.id);
  const r = await request(`${app.url}/v1/proxy/v1/chat/completions`, { headers: { authorization: `Bearer ${tok.token}` }, body: CHAT });
  t.is(r.status, 200, r.text);
  t.is(fake.received.at(-1)!.url, '/v1/chat/completions');
  t.is(fake.received.at(-1)!.headers.authorization, `Bearer ${key}`);
});

test('unit: the template\'s origin per credential, and what a template may not do', (t) => {
  const p = validateProvider('regional.js', regional);
  t.is(p.target, undefined);
  t.is(credentialWire(p, { secrets: { api_key: 'sk-x-01234567' }, plain: { region: 'ap-south-1' } }).target.href, 'https://api.ap-south-1.regional.test/base');
  const withFields = (fields: Record<string, unknown>, upstream = 'https://api.{region}.regional.test') =>
    ({ ...regional, upstream, credential: { fields: { api_key: { secret: true, main: true }, ...fields } } });
  const cases: Array<[unknown, RegExp]> = [
    [withFields({ region: { secret: true, pattern: /^[a-z]{2}-[a-z]+-\d$/ } }, 'https://api.{region}.regional.test'), /\{region\}.*plain field, never a secret/],
    [withFields({ region: {} }), /\{region\}.*strict `pattern`/],
    [withFields({ region: { pattern: /[a-z-]+/ } }), /\{region\}.*anchored/],
    [withFields({ region: { pattern: /^.+$/ } }), /\{region\}.*not strict/],
    [withFields({ region: { pattern: /^[a-z0-9./-]+$/ } }), /\{region\}.*not strict: it accepts "a\/b"/],
    [withFields({ region: { pattern: /^[a-z]{2}-[a-z]+-\d$/, optional: true } }), /\{region\}.*may not be optional/],
    [withFields({ region: { pattern: /^[a-z]{2}-[a-z]+-\d$/ } }, 'https://api.{zone}.regional.test'), /\{zone\} names no credential field/],
    [withFields({ region: { pattern: /^[a-z]{2}-[a-z]+-\d$/ } }, 'http://api.{region}.regional.test'), /https/],
    [withFields({ region: { pattern: /^[a-z]{2}-[a-z]+-\d$/ } }, 'https://{region.regional.test'), /`upstream` template parameters/],
  ];
  // A strict pattern that lets a dot through still gets one DNS label only: the template keeps its host.
  const dotted = validateProvider('dotted.js', withFields({ region: { pattern: /^[a-z0-9.-]{1,40}$/ } }));
  t.is(dotted.templateProblem!({ region: 'x.evil.test' })?.field, 'region');
  t.is(dotted.templateProblem!({ region: 'eu-1' }), undefined);
  for (const [declaration, message] of cases) {
    const err = t.throws(() => validateProvider('regional.js', declaration));
    t.regex(err?.message ?? '', /^provider regional\.js: /);
    t.regex(err?.message ?? '', message);
  }
});

test('unit: a malformed declaration of fields, auth, tokenIn or usage is refused naming the field', (t) => {
  const base = { id: 'broken', upstream: 'https://api.broken.test', auth: { kind: 'header', header: 'x-key' }, routes: [{ method: 'POST', path: 'v1/x' }] };
  // Inline prices pass the price file schema (price-schema.ts): dated, with their source.
  const DATED = { pricesAsOf: '2026-11-23', pricesSource: 'https://prices.broken.test' };
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ keyHeader: 'x-key' }, /`keyHeader` is the first form.*auth: \{ kind: 'header', header \}/],
    [{ rutes: [] }, /unknown key `rutes`/],
    [{ auth: { kind: 'header', header: 'content-type' } }, /`auth.header`/],
    [{ auth: { kind: 'cookie' } }, /`auth.kind` must be header, query or signer/],
    [{ auth: { kind: 'signer', signer: { sign() {} } } }, /`auth.signer` must be \{ needsBody/],
    [{ auth: { kind: 'header', header: 'x-key', field: 'nope' } }, /`auth.field`/],
    [{ tokenIn: [{ header: 'x-key', pattern: /ptok_\S+/ }] }, /first group is the key/],
    [{ tokenIn: [{ header: 'accept' }] }, /`tokenIn` entry/],
    [{ usage: 'nosuch' }, /`usage` must be one of openai, anthropic, gemini, bedrock, vertex or a reader factory/],
    [{ credential: { fields: { region: {} } } }, /at least one secret/],
    [{ credential: { fields: { a_key: { secret: true }, b_key: { secret: true } } } }, /several secrets.*`main: true`/],
    [{ credential: { fields: { api_key: { secret: false } } } }, /`api_key`.*secret: true/],
    [{ credential: { fields: { api_key: { secret: true }, org: { header: 'authorization' } } } }, /credential field "org": `header`/],
    [{ credential: { fields: { api_key: { secret: true, header: 'x-secret' } } } }, /secret field is never sent as a header/],
    [{ credential: { fields: { api_key: { secret: true, pattern: /x/g } } } }, /`pattern` must be a RegExp without the g or y flag/],
    [{ credential: { fields: { key_hint: { secret: true } } } }, /credential field "key_hint"/],
    [{ routes: [], allow: [{ method: 'POST', path: 'v1/x' }] }, /not both/],
    [{ prices: { 'm*': { input: -1, output: 2 } }, ...DATED }, /prices\["m\*"\]\.input: Expected number to be greater or equal to 0, got -1/],
    [{ prices: { m: { input: 1, output: 2, maxOutput: 0.5 } }, ...DATED }, /prices\["m"\]\.maxOutput: Expected integer, got 0\.5/],
    [{ prices: { m: { input: 1, output: 2, cachedInptu: 1 } }, ...DATED }, /prices\["m"\]\.cachedInptu: Unexpected property/],
    [{ prices: { m: { input: 1, output: 0.0000001 } }, ...DATED }, /prices\["m"\]\.output: USD per million tokens, a number ≥ 0 with at most six decimal places/],
    [{ prices: { m: { input: 1, output: 2 } } }, /pricesAsOf: Expected required property/],
    [{ prices: { m: { input: 1, output: 2 } }, pricesAsOf: '2026-11-23' }, /pricesSource: Expected required property/],
    [{ prices: { m: { input: 1, output: 2 } }, pricesAsOf: '2026-11-23', pricesSource: 'http://prices.test' }, /pricesSource: Expected string to match/],
    [{ prices: { 'a b': { input: 1, output: 2 } }, ...DATED }, /prices\["a b"\]: not a model name or prefix\*/],
  ];
  for (const [change, message] of cases) {
    const err = t.throws(() => validateProvider('broken.js', { ...base, ...change }), undefined, JSON.stringify(Object.keys(change)));
    t.regex(err?.message ?? '', /^provider broken\.js: /);
    t.regex(err?.message ?? '', message);
  }
  // `allow`, the first name of `routes`, is still read; defaults are filled in.
  const p = validateProvider('fine.js', { id: 'fine', upstream: 'https://api.fine.test/v2/', auth: { kind: 'query', param: 'key' }, allow: [{ method: 'GET', path: 'models' }] });
  t.is(p.target?.href, 'https://api.fine.test/v2');
  t.deepEqual(p.tokenIn, [{ query: 'key' }]);
  t.is(p.usage, 'openai');
  t.is(p.mainSecret, 'api_key');
  t.deepEqual(p.routes.map((r) => r.path), ['models']);
});

test('a template naming a secret field, or a field without a strict pattern, stops start-up naming the file', async (t) => {
  const source = (field: string) => `export default { apiVersion: 1, id: 'broken', upstream: 'https://{region}.broken.test', credential: { fields: { api_key: { secret: true, main: true }, region: ${field} } }, auth: { kind: 'header', header: 'x-key' }, routes: [{ method: 'POST', path: 'v1/x' }] };`;
  for (const [file, field] of [['secret-param.js', "{ secret: true, pattern: /^[a-z]+$/ }"], ['loose-param.js', '{}'], ['wide-param.js', '{ pattern: /^[^/]*$/ }']]) {
    const err = await t.throwsAsync(startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, [], { [file!]: source(field!) }) } }));
    t.regex(err?.message ?? '', new RegExp(`^provider (?:.*/)?${file!.replace('.', '\\.')}: .*\\{region\\}`), file);
  }
  // An unknown built-in signer is found at start-up too.
  const unknown = "export default { apiVersion: 1, id: 'broken', upstream: 'https://api.broken.test', auth: { kind: 'signer', signer: 'sigv5' }, routes: [{ method: 'POST', path: 'v1/x' }] };";
  const err = await t.throwsAsync(startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, [], { 'signer.js': unknown }) } }));
  t.regex(err?.message ?? '', /^provider (?:.*\/)?signer\.js: `auth.signer` "sigv5" is no built-in signer/);
});

test('a record sealed the old way (the bare key) still opens and serves; several secrets are one 0x00 0x01 JSON plaintext; an unknown format fails closed', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['hmacco']), KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_UPSTREAM_HMACCO: fake.url } });
  const org = await createOrg(app);
  const c = app.server.container;
  const envelope = c.resolve(Envelope);
  const store = c.resolve<CredentialStore>(Symbols.CredentialStore);
  const credentials = c.resolve(CredentialService);

  // Written as a build before this change wrote it.
  const legacyKey = 'sk-legacy-sealed-bare-0123456';
  const ref = { orgId: org.id, id: newId('cred'), provider: 'openai' };
  await store.createCredential({ ...ref, ...(await envelope.seal(ref, legacyKey)), keyHint: `…${legacyKey.slice(-4)}`, fields: {}, createdAt: Date.now(), updatedAt: Date.now() }, 100);
  t.deepEqual(await credentials.secretsFor(ref), { secrets: { api_key: legacyKey }, plain: {}, owner: { orgId: org.id, credentialId: ref.id } });
  const tok = await mintToken(app, org, ref.id);
  t.is((await request(`${app.url}/v1/proxy/v1/chat/completions`, { headers: { 'x-proxy-token': tok.token }, body: CHAT })).status, 200);
  t.is(fake.received.at(-1)!.headers.authorization, `Bearer ${legacyKey}`);

  // A key-based credential is still sealed as the bare key (an older build can open it); several secrets as one JSON.
  const plainId = await createCredential(app, org, 'openai', 'sk-new-sealed-bare-0123456');
  const plainRecord = (await store.getCredential(org.id, plainId))!;
  t.is(await envelope.open(plainRecord, plainRecord), 'sk-new-sealed-bare-0123456');
  const two = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'hmacco', key_id: 'kid_Sealed012345678', key_secret: 'sealed-secret-0123456789' } });
  const twoRecord = (await store.getCredential(org.id, two.body.id))!;
  const plaintext = await envelope.open(twoRecord, twoRecord);
  t.is(plaintext.slice(0, 2), '\u0000\u0001');
  t.deepEqual(JSON.parse(plaintext.slice(2)), { key_id: 'kid_Sealed012345678', key_secret: 'sealed-secret-0123456789' });
  t.deepEqual(decodeSecrets(encodeSecrets({ api_key: 'sk-roundtrip-0123' })), { api_key: 'sk-roundtrip-0123' });
  t.is(encodeSecrets({ api_key: 'sk-roundtrip-0123' }), 'sk-roundtrip-0123');

  // A plaintext in a format this build does not know is never served, nor guessed at.
  const futureRef = { orgId: org.id, id: newId('cred'), provider: 'openai' };
  await store.createCredential({ ...futureRef, ...(await envelope.seal(futureRef, '\u0000\u0002{"api_key":"sk-future-0123456789"}')), keyHint: '…6789', fields: {}, createdAt: Date.now(), updatedAt: Date.now() }, 100);
  const future = await mintToken(app, org, futureRef.id);
  const before = fake.received.length;
  const r = await request(`${app.url}/v1/proxy/v1/chat/completions`, { headers: { 'x-proxy-token': future.token }, body: CHAT });
  t.is(r.status, 503);
  t.is(r.body.error.code, 'unavailable');
  t.is(fake.received.length, before, 'nothing was sent');
  t.false(app.logText().includes('sk-future-0123456789'));
});
