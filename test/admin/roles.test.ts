/**
 * Every role against every admin route, table-driven from the live route table: a role the route
 * allows is never refused 403 `forbidden` (its dummy body or id may still be a 400 or 404), a role
 * it does not allow is always refused 403 `forbidden` before anything is read or changed. Routes
 * this table does not name (added by later work) must follow the method's default: GET viewer and
 * up, anything else admin and up.
 */
import 'reflect-metadata';
import test from 'ava';
import type { Route } from '../../src/http/router.js';
import { rolesOf } from '../../src/vault/roles.js';
import { api, createCredential, createOrg, startApp, type TestApp } from '../support/app.js';

type Role = 'owner' | 'admin' | 'minter' | 'viewer';
const ALL: Role[] = ['owner', 'admin', 'minter', 'viewer'];
/** Every key role and `member` (a signed-in member whose groups map to no other role: test/people/). */
const EVERYONE = [...ALL, 'member'] as Role[];
const READ: Role[] = ['owner', 'admin', 'viewer'];
const WRITE: Role[] = ['owner', 'admin'];

/** The contract's table: route → the roles that may call it. */
const EXPECTED: Record<string, Role[]> = {
  'GET /v1/orgs/self': EVERYONE,
  // Gateway-wide declarations (fields, SDK variables), no organisation's data: a minter's console shows its SDK variables from them.
  'GET /v1/providers': EVERYONE,
  'PUT /v1/orgs/self/sso': ['owner'],
  'GET /v1/orgs/self/sso': ['owner'],
  'GET /v1/session': EVERYONE,
  'DELETE /v1/session': EVERYONE,
  'POST /v1/members/self/tokens': EVERYONE,
  // A per-member OAuth credential: each signed-in member connects (and forgets) its own account; the organisation's is an admin's.
  'POST /v1/credentials/:id/connect': EVERYONE,
  'DELETE /v1/credentials/:id/connection': EVERYONE,
  'GET /v1/members': READ,
  'PATCH /v1/members/:id': WRITE,
  'DELETE /v1/members/:id': WRITE,
  'POST /v1/orgs/self/token/rotate': ['owner'],
  'POST /v1/credentials': WRITE,
  'GET /v1/credentials': READ,
  'GET /v1/credentials/:id': READ,
  'POST /v1/credentials/:id/rotate': WRITE,
  'DELETE /v1/credentials/:id': WRITE,
  'POST /v1/tokens': ['owner', 'admin', 'minter'],
  'GET /v1/tokens': ALL,
  'GET /v1/tokens/:id': ALL,
  'DELETE /v1/tokens/:id': WRITE,
  'PATCH /v1/credentials/:id': WRITE,
  'PATCH /v1/tokens/:id': WRITE,
  'PATCH /v1/admin-keys/:id': WRITE,
  'GET /v1/usage': READ,
  'GET /v1/audit': READ,
  'POST /v1/admin-keys': WRITE,
  'GET /v1/admin-keys': WRITE,
  'GET /v1/admin-keys/:id': WRITE,
  'DELETE /v1/admin-keys/:id': WRITE,
};

const defaultFor = (method: string): Role[] => (method === 'GET' ? READ : WRITE);

async function keys(app: TestApp): Promise<Record<Role, string>> {
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-roles-0123456789abcdef');
  const out: Record<string, string> = { owner: org.token };
  for (const role of ['admin', 'minter', 'viewer'] as const) {
    const r = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { name: `${role} key`, role, ...(role === 'minter' ? { credential_ids: [cred] } : {}) } });
    if (r.status !== 201) throw new Error(`admin key create failed: ${r.status} ${r.text}`);
    out[role] = r.body.token;
  }
  return out as Record<Role, string>;
}

/** A request that reaches the route but changes nothing: unknown ids, and a body every body schema refuses. */
function probe(route: Route): { path: string; body?: unknown } {
  const path = route.pattern.replace(/:[A-Za-z_]+/g, 'none_000000000000000000000000');
  return route.method === 'POST' || route.method === 'PATCH' || route.method === 'PUT' ? { path, body: { not_a_field: 1 } } : { path };
}

test('every role against every org route: allowed roles pass the role check, the others get 403 forbidden', async (t) => {
  const app = await startApp(t);
  const k = await keys(app);
  const routes = app.server.router.all().filter((r) => r.auth === 'org');
  // The table names every route this work knows; a route it does not name is held to its method's default.
  for (const name of Object.keys(EXPECTED)) t.true(routes.some((r) => `${r.method} ${r.pattern}` === name), `${name} is registered`);
  for (const route of routes) {
    const name = `${route.method} ${route.pattern}`;
    const allowed = EXPECTED[name] ?? defaultFor(route.method);
    const { path, body } = probe(route);
    for (const role of ALL) {
      const r = await api(app, route.method, path, { token: k[role], ...(body !== undefined ? { body } : {}) });
      if (allowed.includes(role)) {
        t.not(r.body?.error?.code, 'forbidden', `${role} may call ${name} (${r.status})`);
        t.true(r.status < 500, `${role} ${name}: ${r.status}`);
      } else {
        t.is(r.status, 403, `${role} may not call ${name}`);
        t.deepEqual(r.body.error, { type: 'permission', code: 'forbidden', message: `A ${role} key may not call ${name}.` }, name);
      }
    }
  }
  // The org token survived the matrix (the rotate probe was refused by its body, not run).
  t.is((await api(app, 'GET', '/v1/orgs/self', { token: k.owner })).status, 200);
});

test('the route table\'s roles are what the OpenAPI document says (x-keyward-roles) and 403 is documented on org routes', async (t) => {
  const app = await startApp(t);
  const doc: any = await (await fetch(`${app.url}/v1/openapi.json`)).json();
  for (const route of app.server.router.all().filter((r) => r.auth === 'org')) {
    const op = doc.paths[route.pattern.replace(/:([A-Za-z_]+)/g, '{$1}')][route.method.toLowerCase()];
    const name = `${route.method} ${route.pattern}`;
    t.deepEqual([...op['x-keyward-roles']].sort(), [...(EXPECTED[name] ?? defaultFor(route.method))].sort(), name);
    t.true(JSON.stringify(op.responses['403']).includes('forbidden'), `${name} documents 403 forbidden`);
  }
});

test('a refused role changes nothing: a viewer\'s DELETE leaves the credential, a minter\'s credential create stores none; audited as denied', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-roles-0123456789abcdef');
  const viewer = (await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { name: 'v', role: 'viewer' } })).body;
  const minter = (await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { name: 'm', role: 'minter' } })).body;
  t.is((await api(app, 'DELETE', `/v1/credentials/${cred}`, { token: viewer.token })).status, 403);
  t.is((await api(app, 'GET', `/v1/credentials/${cred}`, { token: org.token })).status, 200);
  t.is((await api(app, 'POST', '/v1/credentials', { token: minter.token, body: { provider: 'openai', api_key: 'sk-roles-another-0123456789' } })).status, 403);
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data.length, 1);
  const audit = (await api(app, 'GET', '/v1/audit', { token: org.token })).body.data;
  const denied = audit.filter((e: { outcome: string }) => e.outcome === 'denied');
  t.deepEqual(denied.map((e: { action: string; actor: string }) => [e.action, e.actor]).sort(), [['credential.create', minter.id], ['credential.delete', viewer.id]].sort());
});

test('docs/operate/api.md\'s roles table says what the route table does, for every route it names and every route of this table', async (t) => {
  const { readFileSync } = await import('node:fs');
  const { ROOT } = await import('../support/app.js');
  // The roles table moved from the README to docs/operate/api.md with the rest of the API's reference.
  const readme = readFileSync(`${ROOT}/docs/operate/api.md`, 'utf8');
  const section = readme.slice(readme.indexOf('## Roles and admin keys'), readme.indexOf('## Idempotency, audit, abuse controls'));
  const rows = new Map<string, Role[]>();
  for (const line of section.split('\n')) {
    const m = /^\| `([A-Z]+ \/v1\/[^`]+)` \|(.*)\|$/.exec(line);
    if (!m) continue;
    const cells = m[2]!.split('|').map((c) => c.trim());
    rows.set(m[1]!, ALL.filter((_, i) => cells[i]!.startsWith('✓')));
  }
  const app = await startApp(t);
  const routes = new Map(app.server.router.all().filter((r) => r.auth === 'org').map((r) => [`${r.method} ${r.pattern}`, r]));
  for (const name of Object.keys(EXPECTED)) t.true(rows.has(name), `docs/operate/api.md names ${name}`);
  for (const [name, roles] of rows) {
    const route = routes.get(name);
    t.truthy(route, `docs/operate/api.md's ${name} is a route`);
    if (route) t.deepEqual(roles, ALL.filter((r) => rolesOf(route.method, route.roles).includes(r)), name);
  }
});
