/**
 * A team's monthly budget across three instances with one killed mid-stream (KEYWARD_LEASE_TTL=3s, three gateway
 * processes on one Firestore emulator, a holding upstream): two members' tokens of one team spend through every
 * instance, three streams are held open through A, and A is killed with SIGKILL. Once A's lease has run out its
 * in-flight worst cases count against the team (GET /v1/teams/:id `spend.used`), and the survivors spend the rest:
 * every refusal is the team's (`team.budget_usd`), and what was forwarded (billable) never passes the team's
 * budget and reaches it to within one request's worst case.
 */
import test from 'ava';
import { api, createCredential, createOrg, mintToken } from '../support/app.js';
import { chat, chatBody, worstCase } from '../support/budget.js';
import { startHoldingCluster } from '../support/holding-upstream.js';
import { eventually, sleep } from '../support/wait.js';
import { formatUsd, parseUsd } from '../../src/pricing/money.js';

const TTL_MS = 3000;

test('SIGKILL mid-stream: a team\'s budget counts the dead instance\'s in-flight worst cases, and the survivors never pass it', async (t) => {
  t.timeout(180_000);
  const { up, servers: [a, b, c] } = await startHoldingCluster(t, 'teams', TTL_MS);
  const w = worstCase(chatBody(0));
  const streamBody = JSON.stringify({ model: 'pm-1', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hold 000000' }] });
  const ws = worstCase(streamBody);
  const cap = 30 * w;

  const org = await createOrg(a.url);
  const cred = await createCredential(a.url, org, 'priced', 'sk-priced-0123456789');
  const team = await api(a.url, 'POST', '/v1/teams', { token: org.token, body: { name: 'platform', members: ['usr_alice1', 'usr_bob1'], budget_usd: formatUsd(cap), credentials: [cred], max_ttl: '1h' } });
  t.is(team.status, 201, team.text);
  const alice = await mintToken(a.url, org, cred, '1h', { team_id: team.body.id, member_id: 'usr_alice1' });
  const bob = await mintToken(a.url, org, cred, '1h', { team_id: team.body.id, member_id: 'usr_bob1' });
  const teamView = async (url: string) => {
    const s = (await api(url, 'GET', `/v1/teams/${team.body.id}`, { token: org.token })).body.spend;
    const v = { used: parseUsd(s.used)!, held: parseUsd(s.held)! };
    t.true(v.used + v.held <= cap, `used ${v.used} + held ${v.held} ≤ the team's budget ${cap}`);
    return v;
  };

  for (const n of [a, b, c]) for (const tok of [alice, bob]) t.is((await chat(n.url, tok.token, chatBody(0))).status, 200);
  const streams = [alice, bob, alice].map((tok) => fetch(`${a.url}/v1/proxy/v1/chat/completions`, {
    method: 'POST', headers: { 'x-proxy-token': tok.token, 'content-type': 'application/json', 'x-hold': '1' }, body: streamBody,
  }).then((r) => r.text()).catch(() => 'cut'));
  await eventually(() => up.seen.held >= 3, 'the three streams open at the upstream');
  a.proc.kill('SIGKILL');
  const killedAt = Date.now();
  await a.exited;
  t.deepEqual(await Promise.all(streams), ['cut', 'cut', 'cut']);
  // The dead instance's lease runs out on the survivors' own clocks (other processes): this wait is what is tested.
  while (Date.now() < killedAt + TTL_MS + 100) await sleep(killedAt + TTL_MS + 100 - Date.now());
  // A's holder is reclaimed by the next claim, or read as expired by the view: its in-flight worst cases are used.
  await eventually(async () => (await teamView(b.url)).used >= 6 * w + 3 * ws, 'the dead instance\'s streams are charged to the team', 30_000);

  let answered = 6;
  let refusals = 0;
  for (let round = 0, refusedInARow = 0; refusedInARow < 4 && round < 200; round++) {
    const r = await chat((round % 2 === 0 ? b : c).url, (round % 3 === 0 ? alice : bob).token, chatBody(round));
    if (r.status === 200) {
      answered++;
      refusedInARow = 0;
      continue;
    }
    t.is(r.status, 429);
    t.is(r.body.error.detail?.cap, 'team.budget_usd', 'the team\'s budget refuses');
    refusals++;
    refusedInARow++;
    const v = await teamView(c.url);
    t.true(cap - v.used - v.held < w, `refused, and the team shown ${cap - v.used - v.held} µ$ left: less than a worst case`);
    await sleep(1100); // past a refusal's recheck
  }
  t.true(refusals >= 4);
  t.is(up.seen.answered, answered, 'only what fit was forwarded');
  const billable = answered * w + 3 * ws;
  t.log(`team budget ${cap} µ$: ${answered} answered + 3 cut streams = ${billable} µ$ billable; ${refusals} refusals`);
  t.true(billable <= cap, `billable ${billable} ≤ the team's budget ${cap}`);
  t.true(billable >= cap - w, `billable ${billable} ≥ the budget − one worst case (${cap - w})`);
});
