/**
 * GET /v1/openapi.json: a valid OpenAPI 3.1 document (checked with
 * @seriousme/openapi-schema-validator, and every schema compiled with Ajv's
 * JSON Schema 2020-12 dialect in strict mode) that documents every route the
 * server registers and every error code, and whose schemas the server's real
 * responses match.
 */
import test, { type ExecutionContext } from 'ava';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { Errors } from '../../src/errors.js';
import { api, ADMIN_TOKEN, createOrg, type ApiResponse } from '../support/app.js';
import { proxyFixture } from '../support/proxy-fixture.js';

const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: Ajv2020) => Ajv2020;

/** The contract's error table, in full. */
const CONTRACT_CODES = [
  'bad_request', 'invalid_request', 'unknown_provider', 'invalid_ttl', 'invalid_scope', 'unauthenticated', 'invalid_token',
  'limit_exceeded', 'path_not_allowed', 'model_not_allowed', 'not_found', 'idempotency_conflict', 'payload_too_large',
  'quota_exceeded', 'token_exhausted', 'rate_limited', 'too_many_failures', 'upstream_unreachable', 'upstream_timeout', 'unavailable',
];

type Doc = any;

/** Compiles the document's schemas with Ajv (2020-12, strict) and validates bodies against an operation's response. */
function schemaChecker(doc: Doc) {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  const rewrite = (v: unknown): unknown => JSON.parse(JSON.stringify(v).replaceAll('"#/components/schemas/', '"keyward#/$defs/'));
  ajv.addSchema({ $id: 'keyward', $defs: rewrite(doc.components.schemas) as object });
  const cache = new Map<string, ValidateFunction>();
  const resolve = (o: any) => (o?.$ref ? o.$ref.split('/').slice(1).reduce((x: any, k: string) => x[k], doc) : o);
  return {
    /** Every component schema compiles. */
    compileAll(): string[] {
      return Object.keys(doc.components.schemas).map((name) => {
        ajv.getSchema(`keyward#/$defs/${name}`);
        return name;
      });
    },
    schema(name: string): ValidateFunction {
      return ajv.getSchema(`keyward#/$defs/${name}`)!;
    },
    /** The operation's documented response for this status (the schema and the headers). */
    response(method: string, path: string, status: number): { validate: ValidateFunction; headers: Record<string, any> } {
      const key = `${method} ${path} ${status}`;
      const op = doc.paths[path]?.[method.toLowerCase()];
      if (!op) throw new Error(`${method} ${path} is not documented`);
      const response = resolve(op.responses[String(status)] ?? op.responses.default);
      if (!response) throw new Error(`${key} is not documented`);
      let validate = cache.get(key);
      if (!validate) {
        validate = ajv.compile(rewrite(response.content['application/json'].schema) as object);
        cache.set(key, validate);
      }
      return { validate, headers: Object.fromEntries(Object.entries(response.headers ?? {}).map(([k, v]) => [k, resolve(v)])) };
    },
  };
}

async function fetchDocument(t: ExecutionContext, url: string): Promise<Doc> {
  const res = await fetch(`${url}/v1/openapi.json`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/json/);
  t.regex(res.headers.get('x-request-id') ?? '', /^req_/);
  return res.json();
}

test('the document is valid OpenAPI 3.1, needs no token, and lists the loaded providers', async (t) => {
  const f = await proxyFixture(t);
  const doc = await fetchDocument(t, f.app.url);
  t.is(doc.openapi, '3.1.0');
  const validator = new Validator();
  t.true(Validator.supportedVersions.has('3.1'));
  // The validator works on (and resolveRefs rewrites) its own copy.
  const result = await validator.validate(structuredClone(doc));
  t.deepEqual(result.errors, undefined, JSON.stringify(result.errors, null, 2));
  t.true(result.valid);
  t.is(validator.version, '3.1');
  // Every $ref resolves and every schema is valid JSON Schema 2020-12 (the OpenAPI validator does not look inside Schema Objects).
  t.notThrows(() => validator.resolveRefs());
  const checker = schemaChecker(doc);
  t.notThrows(() => checker.compileAll());
  for (const p of ['openai', 'anthropic', 'gemini', 'groq']) t.true(doc.components.schemas.Provider.enum.includes(p));
  t.deepEqual(doc.components.securitySchemes.proxyToken, { type: 'apiKey', in: 'header', name: 'X-Proxy-Token', description: doc.components.securitySchemes.proxyToken.description });
  t.is(doc.components.securitySchemes.proxyQuery_key?.in, 'query', 'Gemini\'s ?key= is declared');
  t.is(doc.components.schemas.Ttl.pattern, '^[1-9][0-9]*[smhd]$');
  // The same bytes every time (computed once at start).
  t.deepEqual(await fetchDocument(t, f.app.url), doc);
});

test('every registered route, the proxy and the operational endpoints are documented with their auth', async (t) => {
  const f = await proxyFixture(t);
  const doc = await fetchDocument(t, f.app.url);
  const routes = f.app.server.router.all();
  t.true(routes.length >= 13);
  for (const { method, pattern, auth, idempotent } of routes) {
    const path = pattern.replace(/:([A-Za-z_]+)/g, '{$1}');
    const op = doc.paths[path]?.[method.toLowerCase()];
    t.truthy(op, `${method} ${pattern} is documented as ${method} ${path}`);
    if (!op) continue;
    // A route that needs no token (the token exchange) says so with an empty list, and has no 401.
    if (auth === 'none') t.deepEqual(op.security, [], `${method} ${path} needs no token`);
    else t.true(Array.isArray(op.security) && op.security.length > 0, `${method} ${path} declares its auth`);
    if (auth !== 'none') t.truthy(op.responses['401'], `${method} ${path} documents 401`);
    if (idempotent) t.truthy(op.parameters?.some((p: any) => p.$ref === '#/components/parameters/IdempotencyKey'), `${method} ${path} takes Idempotency-Key`);
    if (method === 'POST' && auth !== 'none') t.true(idempotent === true, `${method} ${path} is idempotent-capable`);
    if (/\{id\}/.test(path)) t.truthy(op.responses['404'], `${method} ${path} documents 404`);
  }
  // And nothing documented under /v1 that the server does not serve.
  const served = new Set(routes.map((r) => `${r.method} ${r.pattern.replace(/:([A-Za-z_]+)/g, '{$1}')}`));
  for (const extra of ['GET /v1/proxy/{path}', 'POST /v1/proxy/{path}', 'DELETE /v1/proxy/{path}', 'GET /v1/openapi.json', 'GET /healthz', 'GET /readyz', 'GET /metrics']) served.add(extra);
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of ['get', 'post', 'delete', 'put', 'patch']) if (item[method]) t.true(served.has(`${method.toUpperCase()} ${path}`), `${method} ${path} is served`);
  }
  t.deepEqual(doc.paths['/v1/orgs'].post.security, [{ adminToken: [] }]);
  t.deepEqual(doc.paths['/v1/credentials'].get.security, [{ orgToken: [] }]);
  const proxySchemes = doc.paths['/v1/proxy/{path}'].post.security.map((s: object) => Object.keys(s)[0]);
  t.deepEqual(proxySchemes.slice(0, 4), ['proxyToken', 'proxyBearer', 'proxyApiKey', 'proxyGoogApiKey']);
  t.true(proxySchemes.includes('proxyQuery_key'), 'Gemini\'s ?key= is an alternative');
  for (const s of proxySchemes) t.truthy(doc.components.securitySchemes[s], s);
  for (const p of ['/healthz', '/readyz', '/metrics', '/v1/openapi.json']) t.deepEqual(doc.paths[p].get.security, [], `${p} needs no token`);
  const proxyHeaders = doc.paths['/v1/proxy/{path}'].post.responses.default.headers;
  t.truthy(proxyHeaders['x-keyward-request-id']);
  t.truthy(proxyHeaders['x-keyward-quota-remaining']);
  t.truthy(doc.paths['/v1/proxy/{path}'].post.responses['429'].headers['retry-after']);
  t.truthy(doc.paths['/v1/tokens'].post.responses['201'].headers['idempotent-replayed']);
  t.truthy(doc.paths['/v1/tokens'].get.responses['200'].headers['x-request-id']);
  // `name` (a prefix) and `status=revoked` arrived with names and revocation records.
  t.deepEqual(doc.paths['/v1/tokens'].get.parameters.map((p: any) => p.$ref.split('/').pop()), ['Limit', 'StartingAfter', 'Name', 'Status']);
  t.like(doc.components.parameters.Status, { name: 'status', in: 'query' });
  t.deepEqual(doc.components.parameters.Status.schema.const, 'revoked');
  for (const path of ['/v1/credentials', '/v1/admin-keys']) {
    t.deepEqual(doc.paths[path].get.parameters.map((p: any) => p.$ref.split('/').pop()), ['Limit', 'StartingAfter', 'Name'], path);
  }
  for (const path of ['/v1/credentials/{id}', '/v1/tokens/{id}', '/v1/admin-keys/{id}']) {
    t.deepEqual(doc.paths[path].patch.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/NameChange' }, path);
  }
  t.is(doc.components.schemas.TokenCreate.properties.name.$ref, '#/components/schemas/Name');
  t.like(doc.components.parameters.Limit.schema, { minimum: 1, maximum: 100, default: 20 });
  // Exactly one of credential_id and pool_id (checked before the schema), so the schema requires ttl alone.
  t.deepEqual(doc.components.schemas.TokenCreate.required, ['ttl']);
  for (const scope of ['credential_id', 'pool_id', 'models', 'paths', 'max_requests', 'rate_limit', 'tokens_per_minute', 'max_concurrent']) t.truthy(doc.components.schemas.TokenCreate.properties[scope]);
});

test('every error code of src/errors.ts and of the contract is in the document, with its status and type', async (t) => {
  const f = await proxyFixture(t);
  const doc = await fetchDocument(t, f.app.url);
  const documented: string[] = doc.components.schemas.ErrorCode.enum;
  for (const code of CONTRACT_CODES) t.true(documented.includes(code), code);
  for (const [name, make] of Object.entries(Errors)) {
    const err = (make as (...a: unknown[]) => { status: number; type: string; code: string })('x', 1);
    t.true(documented.includes(err.code), `Errors.${name} → ${err.code}`);
    t.true(doc.components.schemas.ErrorCode.description.includes(`\`${err.code}\` — ${err.status} ${err.type}:`), `${err.code} is described as ${err.status} ${err.type}`);
    t.true(doc.components.schemas.ErrorType.enum.includes(err.type));
  }
  // Each code appears in some operation's response under its own status.
  const perStatus = new Map<string, Set<string>>();
  for (const item of Object.values<any>(doc.paths)) {
    for (const op of Object.values<any>(item)) {
      for (const [status, r] of Object.entries<any>(op.responses ?? {})) {
        const codes = r.content?.['application/json']?.schema?.allOf?.[1]?.properties?.error?.properties?.code?.enum ?? [];
        for (const c of codes) {
          if (!perStatus.has(c)) perStatus.set(c, new Set());
          perStatus.get(c)!.add(status);
          t.true(r.description.includes(`\`${c}\``), `the ${status} response describes ${c}`);
        }
      }
    }
  }
  for (const code of CONTRACT_CODES) {
    if (code === 'bad_request' || code === 'invalid_request') continue; // checked below with 400
    t.truthy(perStatus.get(code)?.size, `${code} is on some response`);
  }
  t.true(perStatus.get('bad_request')?.has('400'));
  t.true(perStatus.get('quota_exceeded')?.has('429'));
  t.true(perStatus.get('upstream_timeout')?.has('504'));
  t.true(perStatus.get('limit_exceeded')?.has('403'));
  t.true(perStatus.get('idempotency_conflict')?.has('409'));
});

test('real responses match the document\'s schemas', async (t) => {
  const f = await proxyFixture(t);
  const doc = await fetchDocument(t, f.app.url);
  const checker = schemaChecker(doc);
  const check = (method: string, path: string, r: ApiResponse) => {
    const { validate, headers } = checker.response(method, path, r.status);
    t.true(validate(r.body), `${method} ${path} ${r.status}: ${JSON.stringify(validate.errors)} in ${r.text}`);
    for (const [name, h] of Object.entries(headers)) {
      if (h.required) t.truthy(r.headers.get(name), `${method} ${path} ${r.status} has ${name}`);
    }
    if (headers['x-request-id']) t.regex(r.headers.get('x-request-id') ?? '', new RegExp(headers['x-request-id'].schema.pattern));
  };
  const org = { token: f.org.token };

  // Organisations.
  const created = await api(f.app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body: { name: 'globex' }, headers: { 'idempotency-key': 'org-1' } });
  t.is(created.status, 201);
  check('POST', '/v1/orgs', created);
  const replay = await api(f.app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body: { name: 'globex' }, headers: { 'idempotency-key': 'org-1' } });
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.is(replay.body.token, undefined);
  check('POST', '/v1/orgs', replay);
  const other = await createOrg(f.app, 'initech');
  const rotated = await api(f.app, 'POST', '/v1/orgs/self/token/rotate', { token: other.token, body: { grace_s: 5 } });
  t.is(rotated.status, 200);
  check('POST', '/v1/orgs/self/token/rotate', rotated);

  // Credentials.
  const cred = await api(f.app, 'POST', '/v1/credentials', { ...org, body: { provider: 'anthropic', api_key: 'sk-ant-test-0123456789' } });
  t.is(cred.status, 201);
  check('POST', '/v1/credentials', cred);
  t.true(checker.schema('Credential')(cred.body));
  check('GET', '/v1/credentials', await api(f.app, 'GET', '/v1/credentials?limit=2', org));
  check('GET', '/v1/credentials/{id}', await api(f.app, 'GET', `/v1/credentials/${f.credentials.openai}`, org));
  check('POST', '/v1/credentials/{id}/rotate', await api(f.app, 'POST', `/v1/credentials/${cred.body.id}/rotate`, { ...org, body: { api_key: 'sk-ant-test-9876543210' } }));
  // A credential with the plain fields its provider declares: documented on both the request and the view.
  const withFields = await api(f.app, 'POST', '/v1/credentials', { ...org, body: { provider: 'openai', api_key: 'sk-test-fields-0123456789', organization: 'org-abc', project: 'proj_abc' } });
  t.is(withFields.status, 201);
  check('POST', '/v1/credentials', withFields);
  check('GET', '/v1/credentials/{id}', await api(f.app, 'GET', `/v1/credentials/${withFields.body.id}`, org));
  t.true(checker.schema('CredentialCreate')({ provider: 'gemini', api_key: 'AIza-test-0123456789', project: 'my-project' }));
  t.false(checker.schema('CredentialCreate')({ provider: 'openai', api_key: 'sk-test-0123456789', organization: 'has space' }));

  // Tokens, with every scope echoed.
  const minted = await api(f.app, 'POST', '/v1/tokens', {
    ...org,
    body: { credential_id: f.credentials.openai, ttl: '15m', models: ['gpt-4o-mini', 'o1*'], paths: ['v1/chat/completions'], max_requests: 5, rate_limit: 60, budget_usd: '5.00', tokens_per_minute: 1_000_000 },
  });
  t.is(minted.status, 201);
  check('POST', '/v1/tokens', minted);
  t.true(checker.schema('TokenCreated')(minted.body));
  t.false(checker.schema('Token')(minted.body), 'a listed token never has a `token` value');

  // Some traffic, so usage has numbers.
  const proxied = await fetch(f.proxyUrl('v1/chat/completions'), {
    method: 'POST',
    headers: { 'x-proxy-token': minted.body.token, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await proxied.text();
  t.is(proxied.status, 200);
  for (const name of Object.keys(doc.paths['/v1/proxy/{path}'].post.responses.default.headers)) t.truthy(proxied.headers.get(name), name);

  const tokens = await api(f.app, 'GET', '/v1/tokens', org);
  check('GET', '/v1/tokens', tokens);
  t.true(tokens.body.data.length >= 4);
  const one = await api(f.app, 'GET', `/v1/tokens/${minted.body.id}`, org);
  check('GET', '/v1/tokens/{id}', one);
  t.deepEqual(Object.keys(one.body.caps).sort(), ['budget_usd', 'max_requests', 'tokens_per_minute'], 'each cap the token has, from its ledger');
  check('GET', '/v1/usage', await api(f.app, 'GET', '/v1/usage', org));
  check('GET', '/v1/usage/daily', await api(f.app, 'GET', '/v1/usage/daily?from=2026-01-01&to=2026-01-03', org));
  const audit = await api(f.app, 'GET', '/v1/audit?limit=100', org);
  check('GET', '/v1/audit', audit);
  t.true(audit.body.data.length > 3);
  check('DELETE', '/v1/tokens/{id}', await api(f.app, 'DELETE', `/v1/tokens/${minted.body.id}`, org));
  check('DELETE', '/v1/credentials/{id}', await api(f.app, 'DELETE', `/v1/credentials/${cred.body.id}`, org));

  // Error bodies, each against its operation's response for that status.
  const errors: Array<[string, string, ApiResponse, string]> = [
    ['POST', '/v1/tokens', await api(f.app, 'POST', '/v1/tokens', { ...org, body: { credential_id: f.credentials.openai, ttl: '015m' } }), 'invalid_ttl'],
    ['POST', '/v1/tokens', await api(f.app, 'POST', '/v1/tokens', { ...org, body: { credential_id: f.credentials.openai, ttl: '1m', max_requests: 0 } }), 'invalid_scope'],
    ['POST', '/v1/tokens', await api(f.app, 'POST', '/v1/tokens', { ...org, body: { credential_id: 'cred_nope', ttl: '1m' } }), 'not_found'],
    ['POST', '/v1/credentials', await api(f.app, 'POST', '/v1/credentials', { ...org, body: { provider: 'nope', api_key: 'sk-0123456789' } }), 'unknown_provider'],
    ['POST', '/v1/credentials', await api(f.app, 'POST', '/v1/credentials', { ...org, rawBody: '{', headers: { 'content-type': 'application/json' } }), 'invalid_request'],
    ['GET', '/v1/tokens', await api(f.app, 'GET', '/v1/tokens?limit=101', org), 'invalid_request'],
    ['GET', '/v1/usage/daily', await api(f.app, 'GET', '/v1/usage/daily?from=2026-01-01&to=2026-06-01', org), 'invalid_request'],
    ['GET', '/v1/tokens', await api(f.app, 'GET', '/v1/tokens', { token: 'otok_nope' }), 'unauthenticated'],
    ['GET', '/v1/tokens/{id}', await api(f.app, 'GET', `/v1/tokens/${minted.body.id}`, org), 'not_found'],
    ['POST', '/v1/orgs', await api(f.app, 'POST', '/v1/orgs', { token: 'wrong-admin-token-0123456789', body: { name: 'x' } }), 'unauthenticated'],
  ];
  const key = { ...org, headers: { 'idempotency-key': 'tok-conflict' } };
  await api(f.app, 'POST', '/v1/tokens', { ...key, body: { credential_id: f.credentials.openai, ttl: '1m' } });
  errors.push(['POST', '/v1/tokens', await api(f.app, 'POST', '/v1/tokens', { ...key, body: { credential_id: f.credentials.openai, ttl: '2m' } }), 'idempotency_conflict']);
  for (const [method, path, r, code] of errors) {
    t.is(r.body?.error?.code, code, `${method} ${path}: ${r.text}`);
    check(method, path, r);
  }

  // The proxy's own errors.
  const proxyError = async (headers: Record<string, string>, path = 'v1/chat/completions'): Promise<ApiResponse> => {
    const res = await fetch(f.proxyUrl(path), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"model":"gpt-4o-mini","messages":[]}' });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: JSON.parse(text), text };
  };
  const tiny = await api(f.app, 'POST', '/v1/tokens', { ...org, body: { credential_id: f.credentials.openai, ttl: '1m', budget_usd: '0.000001' } });
  for (const [r, code] of [
    [await proxyError({ 'x-proxy-token': 'ptok_nope' }), 'invalid_token'],
    [await proxyError({ authorization: `Bearer ${f.tokens.openai.token}` }, 'v1/not/a/path'), 'path_not_allowed'],
    [await proxyError({ authorization: `Bearer ${tiny.body.token}` }), 'budget_exhausted'],
  ] as const) {
    t.is(r.body.error.code, code);
    check('POST', '/v1/proxy/{path}', r);
    t.regex(r.headers.get('x-keyward-request-id') ?? '', /^req_/);
    if (code === 'invalid_token') t.is(r.headers.get('www-authenticate'), 'Bearer realm="keyward"');
    if (code === 'budget_exhausted') t.like(r.body.error.detail, { cap: 'token.budget_usd', left_usd: '0.000001' });
  }

  // Health.
  for (const p of ['/healthz', '/readyz']) check('GET', p, await api(f.app, 'GET', p));
});
