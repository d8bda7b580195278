/**
 * Audit retention: every record carries expire_at (time + KEYWARD_AUDIT_RETENTION_DAYS);
 * expired records are not listed even before they are deleted, and the SQLite
 * store deletes them in bounded batches.
 */
import 'reflect-metadata';
import test from 'ava';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ConfigError, loadConfig } from '../../src/settings/config.js';
import { AuditLog } from '../../src/controls/audit-log.js';
import { api, createOrg, startApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';

const DAY = 86_400_000;

function auditRows(dataDir: string): Array<{ action: string; time: number; expire_at: number; count: number }> {
  const db = new DatabaseSync(path.join(dataDir, 'keyward.db'), { readOnly: true });
  try {
    return db.prepare('SELECT action, time, expire_at, count FROM audit ORDER BY time').all() as any;
  } finally {
    db.close();
  }
}

test('records expire after KEYWARD_AUDIT_RETENTION_DAYS: no longer listed at once, deleted by the purge', async (t) => {
  const clock = new ManualClock();
  const app = await startApp(t, { clock, env: { KEYWARD_AUDIT_RETENTION_DAYS: '2' } });
  const org = await createOrg(app);
  await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-retained-0123456789' } });
  await api(app, 'GET', '/v1/credentials', { token: 'otok_not_a_token' }); // a refusal (no organisation)
  const audit = app.server.container.resolve(AuditLog);
  await audit.flush();
  const written = auditRows(app.dataDir);
  t.is(written.length, 3);
  for (const r of written) t.is(r.expire_at, r.time + 2 * DAY);

  clock.advance(DAY);
  await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-retained-9876543210' } });
  let listed = await api(app, 'GET', '/v1/audit', { token: org.token });
  t.deepEqual(listed.body.data.map((e: any) => e.action), ['credential.create', 'credential.create', 'org.create']);

  clock.advance(DAY + 1);
  listed = await api(app, 'GET', '/v1/audit', { token: org.token });
  t.deepEqual(listed.body.data.map((e: any) => e.action), ['credential.create'], 'expired records are not listed, before any delete');
  t.is(auditRows(app.dataDir).length, 4, 'still in the table');
  t.is(await audit.purgeExpired(), 3);
  t.deepEqual(auditRows(app.dataDir).map((r) => r.action), ['credential.create'], 'only the live record is left');
  t.is(await audit.purgeExpired(), 0);
});

test('KEYWARD_AUDIT_RETENTION_DAYS: default 400, a positive whole number of days', (t) => {
  t.is(loadConfig({}).auditRetentionDays, 400);
  t.is(loadConfig({ KEYWARD_AUDIT_RETENTION_DAYS: '30' }).auditRetentionDays, 30);
  for (const bad of ['0', '-1', '1.5', 'a year']) {
    t.throws(() => loadConfig({ KEYWARD_AUDIT_RETENTION_DAYS: bad }), { instanceOf: ConfigError, message: /KEYWARD_AUDIT_RETENTION_DAYS/ });
  }
});
