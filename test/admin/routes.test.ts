/**
 * The admin API's route table: every route registered once (the served table has no repeat), and a
 * route registered twice stops start-up, with the store it had opened closed again.
 */
import 'reflect-metadata';
import test from 'ava';
import { Type } from '@sinclair/typebox';
import { DuplicateRouteError, Router, type RouteSpec } from '../../src/http/router.js';
import { TrustPoliciesApi } from '../../src/api/trust-policies.js';
import { loadConfig } from '../../src/settings/config.js';
import { buildServer } from '../../src/boot/container.js';
import { createLogger } from '../../src/log.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ADMIN_TOKEN, startApp, tempDir, TEST_ABUSE_LIMITS } from '../support/app.js';

const spec: RouteSpec = {
  auth: 'none', operationId: 'thing', tag: 'tokens', summary: 'A route built for this test',
  response: { status: 200, schema: Type.Object({}), description: 'Ok.' },
};
const ok = async () => ({ status: 200, body: {} });

test('the server registers each method and path once', async (t) => {
  const app = await startApp(t);
  const routes = app.server.router.list().map((r) => `${r.method} ${r.pattern.replace(/:[^/]+/g, ':')}`);
  t.true(routes.length > 20);
  t.deepEqual([...new Set(routes)], routes, 'no route twice');
  t.true(routes.includes('POST /v1/trust-policies') && routes.includes('GET /v1/admin-keys/:'));
});

test('the router refuses a second registration of a route, whatever its parameter names', (t) => {
  const router = new Router();
  router.add('GET', '/v1/things/:id', spec, ok);
  router.add('POST', '/v1/things/:id', spec, ok); // another method: another route
  router.add('GET', '/v1/things/self', spec, ok); // a fixed segment is another path
  t.throws(() => router.add('GET', '/v1/things/:id', spec, ok), { instanceOf: DuplicateRouteError, message: 'route registered twice: GET /v1/things/:id' });
  t.throws(() => router.add('GET', '/v1/things/:key', spec, ok), { instanceOf: DuplicateRouteError });
  t.throws(() => router.add('GET', '/v1//things/:id/', spec, ok), { instanceOf: DuplicateRouteError });
  t.is(router.list().length, 3);
});

test.serial('a route registered twice stops start-up, and what start-up opened is closed', async (t) => {
  const original = TrustPoliciesApi.prototype.register;
  TrustPoliciesApi.prototype.register = function twice(router: Router) {
    original.call(this, router);
    original.call(this, router);
  };
  t.teardown(() => (TrustPoliciesApi.prototype.register = original));
  const closed: string[] = [];
  const close = SqliteStore.prototype.close;
  SqliteStore.prototype.close = function spied(this: SqliteStore) {
    closed.push('store');
    return close.call(this);
  };
  t.teardown(() => (SqliteStore.prototype.close = close));
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', KEYWARD_DATA_DIR: tempDir(t), KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN, ...TEST_ABUSE_LIMITS });
  await t.throwsAsync(buildServer(config, createLogger('error')), { instanceOf: DuplicateRouteError, message: /POST \/v1\/trust-policies/ });
  t.deepEqual(closed, ['store'], 'the store start-up opened is closed again');
});
