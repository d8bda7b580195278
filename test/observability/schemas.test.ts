/**
 * One schema per admin wire shape: the same TypeBox schema drives request validation and
 * /v1/openapi.json. A change to a schema shows in both (checked on a route built here), every
 * field the document lists for a request body is validated with `param` naming it and a code the
 * operation documents, and the error catalogue is the one list behind Errors.* and the document.
 */
import test from 'ava';
import { Type } from '@sinclair/typebox';
import { ApiError, ERROR_CATALOGUE, Errors } from '../../src/errors.js';
import { Router } from '../../src/http/router.js';
import { openApiDocument } from '../../src/api/openapi/document.js';
import { named } from '../../src/api/schemas/common.js';
import { TokenCreate, Ttl } from '../../src/api/schemas/tokens.js';
import { bodyContract, rule } from '../../src/api/schemas/validate.js';
import { api, createCredential, createOrg, ADMIN_TOKEN, startApp } from '../support/app.js';

const KEY = 'sk-test-schemas-0123456789';

function refusal(fn: () => unknown): ApiError | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  return undefined;
}

test('a field added to a route\'s body schema is both documented and validated, with its pattern and its param', (t) => {
  // The token-mint schema plus one field, as a change to src/api/schemas/tokens.ts would make it.
  const Changed = named('TokenCreateChanged', Type.Object({
    ...TokenCreate.properties,
    label: Type.Optional(rule(Type.String({ pattern: '^[a-z]{1,8}$' }), '1 to 8 lower-case letters')),
  }, { additionalProperties: false }));
  const contract = bodyContract(Changed);
  const router = new Router();
  router.add('POST', '/v1/things', {
    auth: 'org', idempotent: true, body: contract, operationId: 'createThing', tag: 'tokens', summary: 'A route built for this test',
    response: { status: 201, schema: Type.Object({ ok: Type.Boolean() }), description: 'Made.' },
  }, async () => ({ status: 201, body: { ok: true } }));
  const doc = openApiDocument({ routes: router.all(), keyQueryParams: [] });

  const documented = doc.components.schemas.TokenCreateChanged as any;
  t.is((doc.paths['/v1/things']!.post as any).requestBody.content['application/json'].schema.$ref, '#/components/schemas/TokenCreateChanged');
  t.deepEqual(documented.properties.label, { pattern: '^[a-z]{1,8}$', type: 'string' });
  t.deepEqual(documented.properties.ttl, { $ref: '#/components/schemas/Ttl' });
  // credential_id or pool_id: one of the two (checked before the schema, tokens.ts), so only ttl is required by it.
  t.deepEqual(documented.required, ['ttl']);

  const base = { credential_id: 'cred_x', ttl: '15m' };
  t.deepEqual(contract.parse({ ...base, label: 'abc' }), { ...base, label: 'abc' });
  for (const label of ['ABC', 'abcdefghi', '', 5, null, ['abc']]) {
    const err = refusal(() => contract.parse({ ...base, label }));
    t.is(err?.status, 400, JSON.stringify(label));
    t.is(err?.code, 'invalid_request');
    t.is(err?.param, 'label');
    t.is(err?.message, '`label` must be 1 to 8 lower-case letters.');
  }
  // The ttl keeps its own code through the changed schema, and an unknown field is named before anything else.
  t.like(refusal(() => contract.parse({ ...base, ttl: 15 })), { status: 400, code: 'invalid_ttl', param: 'ttl' });
  t.like(refusal(() => contract.parse({ credential_id: 'cred_x', ttl: 15, lable: 'abc' })), { status: 400, code: 'invalid_request', param: 'lable' });
});

test('the token-mint schema\'s ttl is the one /v1/openapi.json shows, and a mistyped field is a 400 naming it', async (t) => {
  const app = await startApp(t);
  const doc: any = await (await fetch(`${app.url}/v1/openapi.json`)).json();
  t.is(doc.components.schemas.Ttl.pattern, Ttl.pattern);
  t.is(doc.components.schemas.Ttl.type, 'string');
  t.deepEqual(doc.components.schemas.TokenCreate.properties.ttl, { $ref: '#/components/schemas/Ttl' });
  t.deepEqual(doc.components.schemas.TokenCreate.required, TokenCreate.required);
  t.deepEqual(Object.keys(doc.components.schemas.TokenCreate.properties), Object.keys(TokenCreate.properties));

  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  const cases: Array<[string, string, Record<string, unknown>, string, string]> = [
    ['POST', '/v1/tokens', { credential_id: cred, ttl: 15 }, 'invalid_ttl', 'ttl'],
    ['POST', '/v1/tokens', { credential_id: cred, ttl: '15m', max_requests: '5' }, 'invalid_scope', 'max_requests'],
    ['POST', '/v1/tokens', { credential_id: cred, ttl: '15m', models: 'gpt-4o' }, 'invalid_scope', 'models'],
    ['POST', '/v1/tokens', { credential_id: 42, ttl: '15m' }, 'invalid_request', 'credential_id'],
    ['POST', '/v1/tokens', { credential_id: cred, ttl: '15m', tll: '1m' }, 'invalid_request', 'tll'],
    ['POST', '/v1/orgs/self/token/rotate', { grace_s: '2' }, 'invalid_request', 'grace_s'],
    ['POST', `/v1/credentials/${cred}/rotate`, { api_key: 12345678901 }, 'invalid_request', 'api_key'],
    ['POST', '/v1/credentials', { provider: 'openai', api_key: KEY, project: 7 }, 'invalid_request', 'project'],
  ];
  for (const [method, path, body, code, param] of cases) {
    const r = await api(app, method, path, { token: org.token, body });
    t.is(r.status, 400, `${path} ${JSON.stringify(body)}`);
    t.is(r.body.error.code, code, `${path} ${JSON.stringify(body)}`);
    t.is(r.body.error.param, param, `${path} ${JSON.stringify(body)}`);
  }
  const q = await api(app, 'GET', '/v1/audit?limit=abc', { token: org.token });
  t.like(q.body.error, { code: 'invalid_request', param: 'limit' });
  t.deepEqual((await api(app, 'GET', '/v1/tokens', { token: org.token })).body.data, [], 'nothing was minted');
});

test('every field the document lists for a request body is validated: a wrong type → 400 naming it, with a code the operation documents', async (t) => {
  const app = await startApp(t);
  const doc: any = await (await fetch(`${app.url}/v1/openapi.json`)).json();
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  const resolve = (s: any): any => (s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
  // A body each operation accepts, to change one field of at a time.
  const valid: Record<string, Record<string, unknown>> = {
    createOrg: { name: 'globex' },
    rotateOrgToken: { grace_s: 0 },
    createCredential: { provider: 'openai', api_key: KEY },
    rotateCredential: { api_key: KEY },
    createToken: { credential_id: cred, ttl: '15m' },
    createTrustPolicy: { issuer: 'https://token.actions.githubusercontent.com', audience: 'https://keyward.test', subject: 'repo:acme/app:*', credential_id: cred, ttl: '15m' },
    createAdminKey: { name: 'ci', role: 'viewer' },
    createPool: { members: [{ credential_id: cred }] },
    startDeviceSignIn: { org: org.id },
    pollDeviceSignIn: { device_handle: 'x' },
    refreshSession: { refresh_token: 'kref_x' },
    redeemCliSignIn: { code: 'x', code_verifier: 'v'.repeat(43) },
    createPersonalToken: { credential_id: cred },
    connectCredential: {},
    createTeam: { name: 'a-team', max_ttl: '1h' },
    updateTeam: { budget_usd: '1.00' },
    completeCredentialConnect: { state: 'a-state', binding: 'a-binding', code: 'a-code' },
  };
  let checked = 0;
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    const op = item.post;
    if (!op?.requestBody || path.startsWith('/v1/proxy/')) continue;
    // The token exchange answers in RFC 6749's shape and ignores unknown fields (test/identity/exchange.test.ts checks it).
    if (op.responses['400'].content['application/json'].schema.$ref === '#/components/schemas/OAuthError') continue;
    const base = valid[op.operationId];
    t.truthy(base, `a valid body for ${op.operationId}`);
    const schema = resolve(op.requestBody.content['application/json'].schema);
    const variants = schema.anyOf ? schema.anyOf.map(resolve).filter((v: any) => v.properties.provider.const === base!.provider) : [schema];
    const fields = Object.keys(variants[0].properties).filter((f) => f !== 'provider');
    const documented: string[] = op.responses['400'].content['application/json'].schema.allOf[1].properties.error.properties.code.enum;
    const url = path.replace('{id}', cred);
    const token = op.security?.[0]?.adminToken ? ADMIN_TOKEN : org.token;
    for (const field of [...fields, 'not_a_field']) {
      // An object holding an array: wrong for every field (a claims map takes only scalar values).
      const r = await api(app, 'POST', url, { token, body: { ...base, [field]: { wrong: [true] } } });
      t.is(r.status, 400, `${op.operationId}.${field}: ${r.text}`);
      t.is(r.body.error.param, field, `${op.operationId}.${field}`);
      t.true(documented.includes(r.body.error.code), `${op.operationId}.${field}: ${r.body.error.code} is documented under 400`);
      checked++;
    }
  }
  t.true(checked >= 12, `${checked} fields checked`);
});

test('the error catalogue is the one list: every Errors.* is in it with its status and type, and the document lists exactly it', async (t) => {
  for (const [name, make] of Object.entries(Errors)) {
    const err = (make as (...a: unknown[]) => ApiError)('x', 1);
    const entry = (ERROR_CATALOGUE as Record<string, { status: number; type: ApiError['type']; also?: { status: number } }>)[err.code];
    t.truthy(entry, `Errors.${name} → ${err.code} is catalogued`);
    if (!entry) continue;
    t.true(err.status === entry.status || err.status === entry.also?.status, `Errors.${name}: ${err.status} is ${err.code}'s status`);
    t.is(err.type, entry.type, `Errors.${name}`);
  }
  const app = await startApp(t);
  const doc: any = await (await fetch(`${app.url}/v1/openapi.json`)).json();
  t.deepEqual([...doc.components.schemas.ErrorCode.enum].sort(), Object.keys(ERROR_CATALOGUE).sort());
  for (const [code, entry] of Object.entries(ERROR_CATALOGUE)) {
    t.true(doc.components.schemas.ErrorCode.description.includes(`- \`${code}\` — ${entry.status} ${entry.type}: ${entry.when}`), code);
  }
  // Every code an admin operation documents sits under its catalogue status.
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (method === 'parameters') continue;
      for (const [status, r] of Object.entries<any>(op.responses)) {
        for (const code of r.content?.['application/json']?.schema?.allOf?.[1]?.properties?.error?.properties?.code?.enum ?? []) {
          const entry = (ERROR_CATALOGUE as Record<string, { status: number }>)[code]!;
          t.is(String(entry.status), status, `${method} ${path}: ${code} under ${status}`);
        }
      }
    }
  }
  // The HTTP layer's own refusals come from the catalogue too.
  t.like(Errors.headersTooLarge(), { status: 431, code: 'bad_request' });
  t.like(Errors.requestTimeout(), { status: 408, code: 'request_timeout' });
  t.like(Errors.expectationFailed(), { status: 417, code: 'expectation_failed' });
});
