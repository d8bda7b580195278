/**
 * The audit trail's actions are one list (src/controls/audit-actions.ts): every action the core and the built-in
 * plugins record is on it (read from their source, so a new action cannot be recorded without being listed), the
 * API document lists them, and GET /v1/audit and `keyward audit` name each actor that has a name: an admin key
 * (`akey_…`) and a proxy token (`tok_…`, a revoked one's kept), never another organisation's.
 */
import test from 'ava';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { AUDIT_ACTIONS } from '../../src/controls/audit-actions.js';
import { api, createCredential, createOrg, mintToken, ROOT, startApp } from '../support/app.js';
import { cliInProcess } from '../support/cli.js';
import { canaryKey } from '../support/proxy-fixture.js';

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* sources(full);
    else if (name.endsWith('.ts')) yield full;
  }
}

test('every action recorded in src/ and plugins/ is on the one list, and the list has no stray entry', (t) => {
  const used = new Set<string>();
  // `action: 'x.y'` (records, routes), audited(…, 'x.y', …) (the CLI), renameCommand(…, 'x.y', …), refused(ctx, 'x.y')
  // (plugins, the realtime path), auditRefusal(ctx, 'x.y') (the core's stages).
  const patterns = [/\baction: '([a-z_]+\.[a-z_]+)'/g, /\baudited\([^)]*?'([a-z_]+\.[a-z_]+)'/g, /\brenameCommand\([^)]*?'([a-z_]+\.[a-z_]+)'/g, /\b(?:refused|auditRefusal)\(ctx, '([a-z_]+\.[a-z_]+)'\)/g];
  for (const root of ['src', 'plugins']) {
    for (const file of sources(path.join(ROOT, root))) {
      const text = readFileSync(file, 'utf8');
      for (const p of patterns) for (const m of text.matchAll(p)) used.add(m[1]!);
    }
  }
  t.true(used.size >= 20, [...used].join(' '));
  t.deepEqual([...used].filter((a) => !(AUDIT_ACTIONS as readonly string[]).includes(a)), [], 'recorded but not listed');
  t.deepEqual(AUDIT_ACTIONS.filter((a) => !used.has(a)), [], 'listed but never recorded');
  t.true(AUDIT_ACTIONS.includes('mcp.tool_call'));
});

test('GET /v1/audit and keyward audit name the actors that have a name', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app, 'audit-names');
  const other = await createOrg(app, 'audit-names-other');
  const key = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { name: 'ci bot', role: 'admin' } });
  t.is(key.status, 201);
  const cred = await createCredential(app, { id: org.id, token: key.body.token }, 'openai', canaryKey('openai'));
  const tok = await mintToken(app, org, cred, '1h', { name: 'doomed agent' });
  t.is((await api(app, 'DELETE', `/v1/tokens/${tok.id}`, { token: key.body.token })).status, 200);
  // The other organisation's admin key, same name: never named in this one's trail, and vice versa.
  t.is((await api(app, 'POST', '/v1/admin-keys', { token: other.token, body: { name: 'ci bot', role: 'admin' } })).status, 201);

  const trail = (await api(app, 'GET', '/v1/audit?limit=100', { token: org.token })).body.data as Array<Record<string, string>>;
  const made = trail.find((e) => e.action === 'credential.create')!;
  t.like(made, { actor: key.body.id, actor_name: 'ci bot' });
  t.like(trail.find((e) => e.action === 'token.revoke'), { actor: key.body.id, actor_name: 'ci bot', target: tok.id, target_name: 'doomed agent' });
  const byOrgToken = trail.find((e) => e.action === 'admin_key.create')!;
  t.regex(byOrgToken.actor, /^otk_/);
  t.false('actor_name' in byOrgToken, 'the organisation token has no name');
  const otherTrail = (await api(app, 'GET', '/v1/audit?limit=100', { token: other.token })).body.data as Array<Record<string, string>>;
  t.false(otherTrail.some((e) => e.actor === key.body.id), 'another organisation\'s trail has none of this one\'s actors');

  const cli = await cliInProcess(['audit', '--org', org.id], { KEYWARD_DATA_DIR: app.dataDir });
  t.is(cli.code, 0, cli.stderr);
  t.regex(cli.stdout, new RegExp(`credential\\.create +success +${key.body.id} \\(ci bot\\)`));
});
