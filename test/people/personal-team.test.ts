/**
 * Personal tokens within the team: POST /v1/members/self/tokens (what `keyward token` calls) binds the token to
 * the member and to its team (a team listing the member's id, else one of its provider groups), lives the
 * smaller of the asked ttl (1 h by default) and the team's max_ttl, and is refused for a credential the team
 * does not allow. A member of no team mints as before (no team, 1 h).
 */
import test from 'ava';
import { api, createCredential } from '../support/app.js';
import { sessionCall, signIn } from '../support/sign-in.js';
import { ssoSetup } from './_setup.js';

const lifetime = (b: { created_at: string; expires_at: string }) => Date.parse(b.expires_at) - Date.parse(b.created_at);

test('a member\'s personal token is bound to its team (by group, then by id), cut to max_ttl, only for the team\'s credentials', async (t) => {
  const { app, gateway, provider, org } = await ssoSetup(t);
  const allowed = await createCredential(app, org, 'openai', 'sk-people-team-allowed-0123456789');
  const other = await createCredential(app, org, 'openai', 'sk-people-team-other-0123456789');

  // No team yet: the token is the member's alone, 1 h, for any credential.
  provider.nextPerson = { sub: 'grace', email: 'grace@acme.test', name: 'Grace', groups: ['engineers'] };
  const grace = await signIn(gateway, org.id);
  const me = await sessionCall(grace.browser, gateway, 'GET', '/v1/session');
  const mint = (body: unknown) => sessionCall(grace.browser, gateway, 'POST', '/v1/members/self/tokens', { csrf: me.body.csrf, body });
  const alone = await mint({ credential_id: other });
  t.is(alone.status, 201, JSON.stringify(alone.body));
  t.is(alone.body.team_id, undefined);
  t.is(lifetime(alone.body), 3_600_000);

  // A team of the provider group `engineers`: the member belongs to it without being listed.
  const team = await api(app, 'POST', '/v1/teams', { token: org.token, body: { name: 'engineering', groups: ['engineers'], credentials: [allowed], max_ttl: '30m' } });
  t.is(team.status, 201, team.text);
  const bound = await mint({ credential_id: allowed });
  t.is(bound.status, 201, JSON.stringify(bound.body));
  t.is(bound.body.team_id, team.body.id);
  t.is(bound.body.member_id, me.body.member.id);
  t.is(lifetime(bound.body), 30 * 60_000, 'the smaller of 1 h and the team\'s max_ttl');
  const shorter = await mint({ credential_id: allowed, ttl: '10m' });
  t.is(lifetime(shorter.body), 10 * 60_000, 'a shorter --ttl is kept');
  const longer = await mint({ credential_id: allowed, ttl: '8h' });
  t.is(longer.status, 201);
  t.is(lifetime(longer.body), 30 * 60_000, 'a longer --ttl is cut to max_ttl');
  const refused = await mint({ credential_id: other });
  t.is(refused.status, 403);
  t.is(refused.body.error.code, 'forbidden');
  t.false(JSON.stringify(refused.body).includes('ptok_'));

  // A team listing the member by id wins over one matching its groups.
  const listed = await api(app, 'POST', '/v1/teams', { token: org.token, body: { name: 'platform', members: [me.body.member.id], credentials: [other], max_ttl: '20m' } });
  t.is(listed.status, 201, listed.text);
  const byId = await mint({ credential_id: other });
  t.is(byId.status, 201, JSON.stringify(byId.body));
  t.is(byId.body.team_id, listed.body.id);
  t.is(lifetime(byId.body), 20 * 60_000);
  t.is((await mint({ credential_id: allowed })).status, 403, 'its team is the one that lists it');

  // The proxy reads the binding: the personal token carries the team on its record.
  const record = await api(app, 'GET', `/v1/tokens/${byId.body.id}`, { token: org.token });
  t.is(record.body.team_id, listed.body.id);
  t.is(record.body.member_id, me.body.member.id);
});
