/**
 * The authorization server on the audit trail: a client's registration (anonymous, on no organisation's trail),
 * consent given and refused (the principal), a code redeemed, a refresh rotated, a revocation and a replayed code
 * (the client) are each recorded by id (client `mcpc_…`, grant `mcpg_…`, token `tok_…`), and no row of the audit
 * table holds a code, an access token or a refresh token.
 */
import test from 'ava';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { api } from '../support/app.js';
import { authorizedTokens, authorizeOverHttp, pkce, registerClient, startMcpAuth, tokenRequest } from './fixture.js';

interface Row {
  org: string;
  actor: string;
  action: string;
  target: string;
  outcome: string;
}

test('registration, consent, token, refresh, revocation, denial and a replay are on the audit trail, by id only', async (t) => {
  const f = await startMcpAuth(t);
  const secrets: string[] = [];

  // A grant: registered, consented, redeemed, refreshed once, then its code replayed (the grant ends).
  const first = await authorizedTokens(f, ['get_issue']);
  const refreshed = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: first.refresh, client_id: first.clientId });
  t.is(refreshed.status, 200);
  const replay = await tokenRequest(f, { grant_type: 'authorization_code', code: first.code, code_verifier: first.verifier, redirect_uri: first.redirectUri, client_id: first.clientId, resource: f.resource });
  t.is(replay.status, 400);
  secrets.push(first.access, first.refresh, first.code, refreshed.body.access_token as string, refreshed.body.refresh_token as string);

  // A second grant revoked by its refresh token, a third's access token revoked by itself.
  const second = await authorizedTokens(f, ['list_issues']);
  const third = await authorizedTokens(f, ['list_issues']);
  secrets.push(second.access, second.refresh, second.code, third.access, third.refresh, third.code);
  for (const token of [second.refresh, third.access]) {
    const res = await fetch(`${f.issuer}/v1/oauth/revoke`, { method: 'POST', body: new URLSearchParams({ token }) });
    t.is(res.status, 200);
  }

  // A request denied on the consent page.
  const deniedClient = await registerClient(f);
  const denied = await authorizeOverHttp(f, { clientId: deniedClient, redirectUri: 'http://127.0.0.1:47123/callback', challenge: pkce().challenge, resource: f.resource }, f.org.token, null);
  t.regex(denied.location ?? '', /error=access_denied/);

  const trail = (await api(f.app, 'GET', '/v1/audit?limit=100', { token: f.org.token })).body.data as Array<Record<string, string>>;
  const of = (action: string) => trail.filter((e) => e.action === action).map((e) => ({ actor: e.actor, target: e.target, outcome: e.outcome }));
  const consents = of('mcp_grant.consent');
  t.is(consents.length, 3, 'three consents given');
  for (const c of consents) {
    t.regex(c.target, /^mcpg_[0-9A-Za-z]{24}$/);
    t.regex(c.actor, /^otk_/, 'the principal who consented: the organisation token, by id');
  }
  const [g3, g2, g1] = consents.map((c) => c.target);
  t.deepEqual(of('mcp_grant.token').map((e) => e.target).sort(), [g1, g2, g3].sort(), 'a code redeemed for each grant');
  t.deepEqual(of('mcp_grant.token')[0]!.actor, third.clientId, 'the client is the actor at the token endpoint');
  t.deepEqual(of('mcp_grant.refresh'), [{ actor: first.clientId, target: g1!, outcome: 'success' }]);
  t.deepEqual(of('mcp_grant.replay'), [{ actor: first.clientId, target: g1!, outcome: 'failure' }]);
  const revoked = of('mcp_grant.revoke');
  t.is(revoked.length, 2);
  t.like(revoked.find((e) => e.target === g2), { actor: second.clientId, outcome: 'success' });
  t.regex(revoked.find((e) => e.target !== g2)!.target, /^tok_/, 'an access token revoked by itself: its id');
  const denials = of('mcp_grant.deny');
  t.is(denials.length, 1);
  t.regex(denials[0]!.target, /^mcpg_/);

  // Registration has no organisation: on the store's trail under org '', one row per client.
  const db = new DatabaseSync(path.join(f.app.dataDir, 'keyward.db'), { readOnly: true });
  t.teardown(() => db.close());
  const rows = db.prepare('SELECT * FROM audit').all() as unknown as Row[];
  const registered = rows.filter((r) => r.action === 'mcp_client.register');
  t.deepEqual(registered.map((r) => r.target).sort(), [first.clientId, second.clientId, third.clientId, deniedClient].sort());
  t.true(registered.every((r) => r.org === '' && r.actor === 'anonymous' && r.outcome === 'success'));
  const everything = JSON.stringify(rows);
  for (const secret of [...secrets, f.org.token]) t.false(everything.includes(secret), 'no code or token value on the trail');
  t.false(/kwc_|kwr_|ptok_/.test(everything));
});
