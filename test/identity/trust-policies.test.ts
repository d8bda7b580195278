/**
 * /v1/trust-policies and `keyward trust-policies`: create (issuer allow-list, subject, claims, ttl,
 * scopes checked as a mint checks them), get, list, delete, organisation isolation, audit; the CLI
 * shares the rules; the OpenAPI document describes the exchange's form body and OAuth errors.
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { api, createCredential, createOrg, startApp, tempDir } from '../support/app.js';
import { cli, cliAll } from '../support/cli.js';

const GITHUB = 'https://token.actions.githubusercontent.com';

test('trust policies: create, get, list, delete; isolated per organisation; audited; every rule a 400 with its code', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-openai-0123456789abcdef');
  const body = { issuer: GITHUB, audience: 'https://keyward.example.com', subject: 'repo:acme/app:*', claims: { repository: 'acme/app', run_attempt: 1, fork: false }, credential_id: cred, ttl: '15m', models: ['gpt-4o-mini'], max_requests: 3 };
  const created = await api(app, 'POST', '/v1/trust-policies', { token: org.token, body, headers: { 'idempotency-key': 'tp-1' } });
  t.is(created.status, 201, created.text);
  t.regex(created.body.id, /^tp_[0-9A-Za-z]{24}$/);
  const { id, created_at: createdAt, ...rest } = created.body;
  t.regex(createdAt, /Z$/);
  t.deepEqual(rest, { object: 'trust_policy', expires_at: null, ...body });
  const replay = await api(app, 'POST', '/v1/trust-policies', { token: org.token, body, headers: { 'idempotency-key': 'tp-1' } });
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.is(replay.body.id, id);

  t.deepEqual((await api(app, 'GET', `/v1/trust-policies/${id}`, { token: org.token })).body, created.body);
  const list = await api(app, 'GET', '/v1/trust-policies?limit=5', { token: org.token });
  t.deepEqual(list.body, { object: 'list', data: [created.body], has_more: false });

  const other = await createOrg(app, 'globex');
  t.is((await api(app, 'GET', `/v1/trust-policies/${id}`, { token: other.token })).status, 404);
  t.deepEqual((await api(app, 'GET', '/v1/trust-policies', { token: other.token })).body.data, []);
  t.is((await api(app, 'DELETE', `/v1/trust-policies/${id}`, { token: other.token })).status, 404);
  t.is((await api(app, 'POST', '/v1/trust-policies', { token: other.token, body })).status, 404, 'another organisation\'s credential');
  t.is((await api(app, 'GET', '/v1/trust-policies')).status, 401);

  const refusals: Array<[Record<string, unknown>, number, string, string?]> = [
    [{ issuer: 'https://evil.example' }, 400, 'issuer_not_allowed', 'issuer'],
    [{ issuer: `${GITHUB}/` }, 400, 'issuer_not_allowed', 'issuer'],
    [{ subject: '*' }, 400, 'invalid_request', 'subject'],
    [{ subject: 'repo:*:main' }, 400, 'invalid_request', 'subject'],
    [{ subject: '' }, 400, 'invalid_request', 'subject'],
    // A prefix must fix the owner (`repo:<owner>/`): one character, or an owner left open, would reach other owners' workloads.
    [{ subject: 'r*' }, 400, 'invalid_request', 'subject'],
    [{ subject: 'repo:*' }, 400, 'invalid_request', 'subject'],
    [{ subject: 'repo:acme*' }, 400, 'invalid_request', 'subject'],
    [{ subject: 'repo:/*' }, 400, 'invalid_request', 'subject'],
    [{ subject: 'project_path:acme/*' }, 400, 'invalid_request', 'subject'],
    [{ claims: { sub: 'x' } }, 400, 'invalid_request', 'claims'],
    [{ claims: { aud: 'x' } }, 400, 'invalid_request', 'claims'],
    [{ claims: { repository: { nested: true } } }, 400, 'invalid_request', 'claims'],
    [{ claims: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`c${i}`, 'v'])) }, 400, 'invalid_request', 'claims'],
    [{ audience: '' }, 400, 'invalid_request', 'audience'],
    [{ ttl: '0m' }, 400, 'invalid_ttl'],
    [{ ttl: '31d' }, 400, 'invalid_ttl'],
    [{ models: [] }, 400, 'invalid_scope', 'models'],
    [{ paths: ['v1/not-a-route'] }, 400, 'invalid_scope', 'paths'],
    [{ max_requests: 0 }, 400, 'invalid_scope', 'max_requests'],
    [{ credential_id: 'cred_AAAAAAAAAAAAAAAAAAAAAAAA' }, 404, 'not_found'],
    [{ tll: '15m' }, 400, 'invalid_request', 'tll'],
  ];
  for (const [change, status, code, param] of refusals) {
    const r = await api(app, 'POST', '/v1/trust-policies', { token: org.token, body: { ...body, ...change } });
    t.is(r.status, status, `${JSON.stringify(change)}: ${r.text}`);
    t.is(r.body.error?.code, code, JSON.stringify(change));
    if (param) t.is(r.body.error.param, param, JSON.stringify(change));
  }
  const missing = await api(app, 'POST', '/v1/trust-policies', { token: org.token, body: { ...body, subject: undefined } });
  t.is(missing.body.error.param, 'subject');

  const deleted = await api(app, 'DELETE', `/v1/trust-policies/${id}`, { token: org.token });
  t.deepEqual(deleted.body, { id, object: 'trust_policy', deleted: true });
  t.is((await api(app, 'DELETE', `/v1/trust-policies/${id}`, { token: org.token })).status, 404);
  t.is((await api(app, 'GET', `/v1/trust-policies/${id}`, { token: org.token })).status, 404);

  const audit = (await api(app, 'GET', '/v1/audit?limit=100', { token: org.token })).body.data as Array<{ action: string; target: string; outcome: string }>;
  t.truthy(audit.find((a) => a.action === 'trust_policy.create' && a.target === id && a.outcome === 'success'));
  t.truthy(audit.find((a) => a.action === 'trust_policy.delete' && a.target === id && a.outcome === 'success'));
});

test('the OpenAPI document: trust-policy routes, and the exchange with no token, a form body and RFC 6749 errors', async (t) => {
  const app = await startApp(t);
  const doc = await (await fetch(`${app.url}/v1/openapi.json`)).json() as any;
  for (const [path, method] of [['/v1/trust-policies', 'post'], ['/v1/trust-policies', 'get'], ['/v1/trust-policies/{id}', 'get'], ['/v1/trust-policies/{id}', 'delete']]) {
    t.deepEqual(doc.paths[path!][method!].security, [{ orgToken: [] }], `${method} ${path}`);
  }
  t.true(doc.paths['/v1/trust-policies'].post.responses['400'].description.includes('issuer_not_allowed'));
  const exchange = doc.paths['/v1/tokens/exchange'].post;
  t.deepEqual(exchange.security, []);
  t.deepEqual(Object.keys(exchange.requestBody.content).sort(), ['application/json', 'application/x-www-form-urlencoded']);
  t.deepEqual(exchange.responses['400'].content['application/json'].schema, { $ref: '#/components/schemas/OAuthError' });
  t.is(exchange.responses['401'], undefined);
  t.deepEqual(doc.components.schemas.OAuthError.required.sort(), ['error', 'error_description']);
  t.truthy(doc.components.schemas.TrustPolicyCreate.properties.max_requests, 'the token scopes are taken from TokenCreate');
});

test('keyward trust-policies create, list, delete: the API\'s rules and view', async (t) => {
  const dataDir = tempDir(t);
  const env = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64') };
  const org = (await cli(['org', 'create', 'acme', '--json'], { env })).json;
  const cred = (await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai', '--json'], { env, input: 'sk-openai-0123456789abcdef' })).json.id;
  const base = ['trust-policies', 'create', '--org', org.id, '--issuer', GITHUB, '--audience', 'https://keyward.example.com', '--credential', cred];
  const made = await cli([...base, '--subject', 'repo:acme/app:ref:refs/heads/main', '--claim', 'repository=acme/app', '--claim', 'ref=refs/heads/main', '--model', 'gpt-4o-mini', '--ttl', '10m', '--json'], { env });
  t.is(made.code, 0, made.stderr);
  t.regex(made.json.id, /^tp_/);
  t.deepEqual(made.json.claims, { repository: 'acme/app', ref: 'refs/heads/main' });
  t.deepEqual(made.json.models, ['gpt-4o-mini']);
  t.is(made.json.ttl, '10m');
  const text = await cli([...base, '--subject', 'repo:acme/*'], { env });
  t.is(text.code, 0, text.stderr);
  t.regex(text.stdout, /ttl:\s+15m/);

  const [refused, issuer, claim, list] = await cliAll([
    { args: [...base, '--subject', '*'], env },
    { args: ['trust-policies', 'create', '--org', org.id, '--issuer', 'https://evil.example', '--audience', 'a', '--subject', 's', '--credential', cred], env },
    { args: [...base, '--subject', 's', '--claim', 'novalue'], env },
    { args: ['trust-policies', 'list', '--org', org.id, '--json'], env },
  ]);
  t.is(refused!.code, 2);
  t.regex(refused!.stderr, /subject/);
  t.is(issuer!.code, 2);
  t.regex(issuer!.stderr, /KEYWARD_OIDC_ISSUERS/);
  t.is(claim!.code, 2);
  t.is(list!.json.data.length, 2);
  t.is(list!.json.data[1].id, made.json.id);
  const del = await cli(['trust-policies', 'delete', made.json.id, '--org', org.id], { env });
  t.is(del.code, 0, del.stderr);
  const [again, after] = await cliAll([
    { args: ['trust-policies', 'delete', made.json.id, '--org', org.id], env },
    { args: ['trust-policies', 'list', '--org', org.id, '--json'], env },
  ]);
  t.is(again!.code, 3);
  t.is(after!.json.data.length, 1);

  // What the CLI stored, the API serves.
  const app = await startApp(t, { dataDir, env });
  const r = await api(app, 'GET', '/v1/trust-policies', { token: org.token });
  t.is(r.body.data.length, 1);
  t.is(r.body.data[0].subject, 'repo:acme/*');
});
