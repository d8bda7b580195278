/**
 * Teams over HTTP on one instance (the `priced` provider before a usage upstream that bills each request its
 * worst case): the API (create, read, list, change, delete; its refusals), tokens minted for a team (its
 * credentials and pools only, within its max_ttl, a member of the team), the nested budgets (token ≤ member ≤
 * team ≤ org: each refuses with `detail.cap` naming it, and what every level settled is what the requests
 * cost), a team's tokens_per_minute shared by its tokens, a member's budget through PATCH /v1/members/:id,
 * the usage breakdown by team and member, and a deleted team's tokens refused at once.
 */
import test from 'ava';
import { api, createCredential, mintToken } from '../support/app.js';
import { budgetSetup, chat, chatBody, spentOf, worstCase } from '../support/budget.js';
import { formatUsd } from '../../src/pricing/money.js';
import { periodOf } from '../../src/accounting/periods.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';

test('the teams API: create, get, list, change, delete; refusals are clear 4xx', async (t) => {
  const s = await budgetSetup(t);
  const create = (body: Record<string, unknown>) => api(s.app, 'POST', '/v1/teams', { token: s.org.token, body });
  const made = await create({ name: 'platform', members: ['usr_alice1'], groups: ['eng'], budget_usd: '12.50', tokens_per_minute: 5000, credentials: [s.credential], max_ttl: '8h' });
  t.is(made.status, 201, made.text);
  t.like(made.body, { object: 'team', name: 'platform', members: ['usr_alice1'], groups: ['eng'], credentials: [s.credential], pools: [], budget_usd: '12.50', tokens_per_minute: 5000, max_ttl: '28800s' });
  t.regex(made.body.id, /^team_[0-9A-Za-z]{24}$/);
  const id = made.body.id as string;

  for (const [body, status, param] of [
    [{ members: [] , max_ttl: '1h' }, 400, 'name'],
    [{ name: 'x' }, 400, 'max_ttl'],
    [{ name: 'x', max_ttl: '1h', budget_usd: 5 }, 400, 'budget_usd'],
    [{ name: 'x', max_ttl: '1h', budget_usd: '0' }, 400, 'budget_usd'],
    [{ name: 'x', max_ttl: '99d' }, 400, 'max_ttl'],
    [{ name: 'x', max_ttl: '1h', members: ['bob'] }, 400, 'members'],
    [{ name: 'x', max_ttl: '1h', credentials: ['cred_nope'] }, 404, undefined],
    [{ name: 'x', max_ttl: '1h', members: ['usr_a', 'usr_a'] }, 400, 'members'],
    [{ name: 'x', max_ttl: '1h', extra: 1 }, 400, undefined],
  ] as const) {
    const r = await create(body);
    t.is(r.status, status, `${JSON.stringify(body)} → ${r.text}`);
    if (param) t.is(r.body.error.param, param, JSON.stringify(body));
  }

  const got = await api(s.app, 'GET', `/v1/teams/${id}`, { token: s.org.token });
  t.is(got.status, 200);
  t.deepEqual(got.body.spend, { used: formatUsd(0), held: formatUsd(0) }, 'a budgeted team shows its month');
  const list = await api(s.app, 'GET', '/v1/teams?name=plat', { token: s.org.token });
  t.deepEqual(list.body.data.map((x: { id: string }) => x.id), [id]);
  const changed = await api(s.app, 'PATCH', `/v1/teams/${id}`, { token: s.org.token, body: { budget_usd: null, tokens_per_minute: null, name: 'platform eu' } });
  t.is(changed.status, 200, changed.text);
  t.false('budget_usd' in changed.body);
  t.false('tokens_per_minute' in changed.body);
  t.is(changed.body.name, 'platform eu');
  t.is((await api(s.app, 'PATCH', `/v1/teams/${id}`, { token: s.org.token, body: { name: null } })).status, 400);
  t.is((await api(s.app, 'GET', '/v1/teams/team_nope', { token: s.org.token })).status, 404);
  t.is((await api(s.app, 'GET', `/v1/teams/${id}`, {})).status, 401);
  const del = await api(s.app, 'DELETE', `/v1/teams/${id}`, { token: s.org.token });
  t.deepEqual(del.body, { id, object: 'team', deleted: true });
  t.is((await api(s.app, 'DELETE', `/v1/teams/${id}`, { token: s.org.token })).status, 404);
});

test('tokens for a team: only its credentials, within its max_ttl, for its members; shown with team_id and member_id', async (t) => {
  const s = await budgetSetup(t);
  const other = await createCredential(s.app, s.org, 'priced', 'sk-priced-other-0123456789');
  const team = (await api(s.app, 'POST', '/v1/teams', { token: s.org.token, body: { name: 'ml', members: ['usr_alice1'], credentials: [s.credential], max_ttl: '1h' } })).body;
  const mint = (credential: string, ttl: string, extra: Record<string, unknown>) =>
    api(s.app, 'POST', '/v1/tokens', { token: s.org.token, body: { credential_id: credential, ttl, ...extra } });
  const ok = await mint(s.credential, '30m', { team_id: team.id, member_id: 'usr_alice1' });
  t.is(ok.status, 201, ok.text);
  t.like(ok.body, { team_id: team.id, member_id: 'usr_alice1' });
  t.like((await api(s.app, 'GET', `/v1/tokens/${ok.body.id}`, { token: s.org.token })).body, { team_id: team.id, member_id: 'usr_alice1' });
  t.is((await mint(other, '30m', { team_id: team.id })).status, 403, 'a credential the team does not have');
  t.is((await mint(s.credential, '2h', { team_id: team.id })).body.error?.code, 'invalid_ttl', 'past the team\'s max_ttl');
  t.is((await mint(s.credential, '30m', { team_id: team.id, member_id: 'usr_bob1' })).body.error?.param, 'member_id', 'not a member of the team');
  t.is((await mint(s.credential, '30m', { team_id: 'team_0000000000000000000000nope' })).status, 404);
  t.is((await mint(s.credential, '30m', { member_id: 'alice' })).status, 400);
});

test('nested budgets: each level refuses what does not fit it (detail.cap names it) and every level settles exactly what was spent; breakdown by team and member', async (t) => {
  const s = await budgetSetup(t);
  const w = worstCase(chatBody(0));
  // org ≥ team ≥ member ≥ token, each room for a few requests more than the one inside it.
  const orgCap = 9 * w;
  t.is((await api(s.app, 'PATCH', '/v1/orgs/self', { token: s.org.token, body: { spend_limit_usd: formatUsd(orgCap) } })).status, 200);
  const team = (await api(s.app, 'POST', '/v1/teams', { token: s.org.token, body: { name: 'core', budget_usd: formatUsd(6 * w), credentials: [s.credential], max_ttl: '1h' } })).body;
  const member = await api(s.app, 'PATCH', '/v1/members/usr_alice1', { token: s.org.token, body: { budget_usd: formatUsd(3 * w) } });
  t.deepEqual(member.body, { id: 'usr_alice1', object: 'member', budget_usd: formatUsd(3 * w) });
  t.is((await api(s.app, 'PATCH', '/v1/members/bob', { token: s.org.token, body: { budget_usd: '1.00' } })).status, 404);
  const tok = await mintToken(s.app, s.org, s.credential, '1h', { team_id: team.id, member_id: 'usr_alice1', budget_usd: formatUsd(2 * w) });
  const tok2 = await mintToken(s.app, s.org, s.credential, '1h', { team_id: team.id, member_id: 'usr_alice1' });
  const tok3 = await mintToken(s.app, s.org, s.credential, '1h', { team_id: team.id, member_id: 'usr_bob1' });
  const loose = await mintToken(s.app, s.org, s.credential, '1h');
  const caps: string[] = [];
  let spent = 0;
  for (const token of [tok, tok, tok, tok2, tok2, tok3, tok3, tok3, tok3, loose, loose, loose, loose]) {
    const r = await chat(s.app.url, token.token, chatBody(caps.length));
    if (r.status === 200) spent += w;
    else {
      t.is(r.status, 429);
      t.is(r.body.error.code, 'budget_exhausted');
    }
    caps.push(r.status === 200 ? 'ok' : r.body.error.detail.cap);
  }
  t.deepEqual(caps, [
    'ok', 'ok', 'token.budget_usd', // the token's budget: two
    'ok', 'member.budget_usd', // alice's budget: three over both her tokens
    'ok', 'ok', 'ok', 'team.budget_usd', // the team's: six over every member
    'ok', 'ok', 'ok', 'org.spend_limit_usd', // the org's: nine over every token
  ]);
  const month = periodOf(Date.now());
  t.is(await spentOf(s.app, `spend:tok:${tok.id}`), 2 * w);
  t.is(await spentOf(s.app, `spend:mem:${s.org.id}:usr_alice1:${month}`), 3 * w);
  t.is(await spentOf(s.app, `spend:team:${team.id}:${month}`), 6 * w);
  t.is(await spentOf(s.app, `spend:org:${s.org.id}:${month}`), spent);
  t.is(spent, orgCap);
  const refused = await api(s.app, 'GET', `/v1/teams/${team.id}`, { token: s.org.token });
  t.deepEqual(refused.body.spend, { used: formatUsd(6 * w), held: formatUsd(0) }, 'the team is shown no room its refusals did not have');

  const byTeam = await api(s.app, 'GET', '/v1/usage/breakdown?by=team', { token: s.org.token });
  t.deepEqual(byTeam.body.data.map((r: { key: string; name: string; spend_usd: string; requests: number }) => [r.key, r.name, r.spend_usd, r.requests]), [[team.id, 'core', formatUsd(6 * w), 6]]);
  const byMember = await api(s.app, 'GET', '/v1/usage/breakdown?by=member', { token: s.org.token });
  t.deepEqual(byMember.body.data.map((r: { key: string; spend_usd: string }) => [r.key, r.spend_usd]), [['usr_alice1', formatUsd(3 * w)], ['usr_bob1', formatUsd(3 * w)]]);
});

test('a team\'s tokens_per_minute is shared by its tokens; a deleted team\'s tokens are refused at once', async (t) => {
  const s = await budgetSetup(t);
  const tokens = Buffer.byteLength(chatBody(0)) + INPUT_OVERHEAD_TOKENS + 100;
  const team = (await api(s.app, 'POST', '/v1/teams', { token: s.org.token, body: { name: 'tpm', tokens_per_minute: 3 * tokens, credentials: [s.credential], max_ttl: '1h' } })).body;
  const a = await mintToken(s.app, s.org, s.credential, '1h', { team_id: team.id });
  const b = await mintToken(s.app, s.org, s.credential, '1h', { team_id: team.id, tokens_per_minute: 10 * tokens });
  const statuses: number[] = [];
  for (const tk of [a, b, a, b]) statuses.push((await chat(s.app.url, tk.token, chatBody(statuses.length))).status);
  t.deepEqual(statuses, [200, 200, 200, 429]);
  const refused = await chat(s.app.url, a.token, chatBody(9));
  t.is(refused.body.error.code, 'tokens_per_minute_exceeded');
  t.is(refused.body.error.detail.cap, 'team.tokens_per_minute');
  t.is((await api(s.app, 'DELETE', `/v1/teams/${team.id}`, { token: s.org.token })).status, 200);
  t.is((await chat(s.app.url, a.token, chatBody(10))).status, 401, 'the deleted team\'s token is refused');
  t.is((await api(s.app, 'GET', `/v1/tokens/${b.id}`, { token: s.org.token })).status, 404, 'its tokens went with it');
});
