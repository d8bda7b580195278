/**
 * A token's view after an instance dies mid-stream (KEYWARD_LEASE_TTL=3s, three gateway processes on one
 * Firestore emulator): a budgeted token streams through A and A is killed with SIGKILL. Once A's lease has
 * run out, the token's `caps.budget_usd` on the survivors charges A's in-flight worst cases as the
 * organisation's `spend_usd` does (the same used and held: the organisation has this one token and a limit
 * equal to its budget), although the token's `usage.spend_usd` counts only what was settled (what the view
showed before the caps: a budget left while refused); then, while the
 * survivors spend the rest, whenever a request is refused `budget_exhausted` neither view shows a worst case
 * left, and used + held ≤ limit in both throughout.
 */
import test from 'ava';
import { api, createCredential, createOrg, mintToken, type SpawnedServer } from '../support/app.js';
import { chat, chatBody, worstCase } from '../support/budget.js';
import { startHoldingCluster } from '../support/holding-upstream.js';
import { eventually, sleep } from '../support/wait.js';
import { formatUsd, parseUsd } from '../../src/pricing/money.js';

const TTL_MS = 3000;


interface Money { used: number; held: number; limit: number }

test('SIGKILL mid-stream: the token\'s caps charge its in-flight worst cases as the organisation\'s view does, and neither shows room while refusing', async (t) => {
  t.timeout(180_000);
  const { up, servers: [a, b, c] } = await startHoldingCluster(t, 'caps', TTL_MS);
  const w = worstCase(chatBody(0));
  const streamBody = JSON.stringify({ model: 'pm-1', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hold 000000' }] });
  const ws = worstCase(streamBody);
  const cap = 30 * w;

  const org = await createOrg(a.url);
  const cred = await createCredential(a.url, org, 'priced', 'sk-priced-0123456789');
  t.is((await api(a.url, 'PATCH', '/v1/orgs/self', { token: org.token, body: { spend_limit_usd: formatUsd(cap) } })).status, 200);
  const tok = await mintToken(a.url, org, cred, '1h', { budget_usd: formatUsd(cap) });
  const money = (o: { used: string; held: string; limit: string }, what: string): Money => {
    const v = { used: parseUsd(o.used)!, held: parseUsd(o.held)!, limit: parseUsd(o.limit)! };
    t.is(v.limit, cap, what);
    t.true(v.used + v.held <= v.limit, `${what}: used ${v.used} + held ${v.held} ≤ limit ${v.limit}`);
    return v;
  };
  const tokenView = async (node: SpawnedServer) => {
    const body = (await api(node.url, 'GET', `/v1/tokens/${tok.id}`, { token: org.token })).body;
    return { caps: money(body.caps.budget_usd, 'the token\'s budget_usd'), settled: parseUsd(body.usage.spend_usd)! };
  };
  const orgView = async (node: SpawnedServer) => money((await api(node.url, 'GET', '/v1/usage', { token: org.token })).body.spend_usd, 'the organisation\'s spend_usd');

  // Every instance serves a little, so each holds part of both caps; then three streams open through A.
  for (const n of [a, b, c]) for (let i = 0; i < 2; i++) t.is((await chat(n.url, tok.token, chatBody(i))).status, 200);
  const streams = [0, 1, 2].map(() => fetch(`${a.url}/v1/proxy/v1/chat/completions`, {
    method: 'POST', headers: { 'x-proxy-token': tok.token, 'content-type': 'application/json', 'x-hold': '1' }, body: streamBody,
  }).then((r) => r.text()).catch(() => 'cut'));
  await eventually(() => up.seen.held >= 3, 'the three streams open at the upstream');
  t.true((await tokenView(b)).caps.held > 0, 'instances hold part of the token\'s budget');

  a.proc.kill('SIGKILL');
  const killedAt = Date.now();
  await a.exited;
  t.deepEqual(await Promise.all(streams), ['cut', 'cut', 'cut'], 'the caller saw its streams cut');
  // A renewed at most a third of a TTL before it died: past killedAt + TTL its lease has run out.
  const asOf = killedAt + TTL_MS + 100;
  while (Date.now() < asOf) await sleep(asOf - Date.now());

  // Both views now charge what A forwarded and never settled, at its worst case; the token's usage does not.
  const billedBeforeKill = 6 * w + 3 * ws;
  let seen: { token: Awaited<ReturnType<typeof tokenView>>; org: Money } | undefined;
  await eventually(async () => {
    const [token, orgNow] = await Promise.all([tokenView(b), orgView(c)]);
    seen = { token, org: orgNow };
    return token.caps.used === orgNow.used && token.caps.held === orgNow.held;
  }, 'the token\'s view and the organisation\'s agree', 30_000).catch(() => undefined);
  t.log(`after SIGKILL: token used ${seen!.token.caps.used} held ${seen!.token.caps.held} (usage ${seen!.token.settled}); org used ${seen!.org.used} held ${seen!.org.held}; µ$`);
  t.is(seen!.token.caps.used, seen!.org.used, 'the token\'s used is the organisation\'s (its one token)');
  t.is(seen!.token.caps.held, seen!.org.held, 'and so is its held');
  t.true(seen!.token.caps.used >= billedBeforeKill, `the in-flight worst cases are charged: used ${seen!.token.caps.used} ≥ ${billedBeforeKill}`);
  // Its usage counts at most the settled requests (a dead instance's last second of counters may be lost with it).
  t.true(seen!.token.settled <= 6 * w);
  t.true(seen!.token.caps.used - seen!.token.settled >= 3 * ws, 'what the usage does not count, the caps do: the cut streams at their worst case');

  // The survivors spend the rest: after every refusal, neither view shows the refused request's worst case left.
  let answered = 6;
  let refusals = 0;
  for (let round = 0, refusedInARow = 0; refusedInARow < 4 && round < 200; round++) {
    const [serving, other] = round % 2 === 0 ? [b, c] : [c, b];
    const r = await chat(serving.url, tok.token, chatBody(round));
    if (r.status === 200) {
      answered++;
      refusedInARow = 0;
      continue;
    }
    t.is(r.status, 429);
    t.is(r.body.error.code, 'budget_exhausted');
    refusals++;
    refusedInARow++;
    for (const node of [serving, other]) {
      const { caps } = await tokenView(node);
      t.true(caps.limit - caps.used - caps.held < w, `refused, and the token shown ${caps.limit - caps.used - caps.held} µ$ left: less than the worst case ${w}`);
      const o = await orgView(node);
      t.true(o.limit - o.used - o.held < w, `refused, and the organisation shown ${o.limit - o.used - o.held} µ$ left`);
    }
    await sleep(1100); // past a refusal's recheck: that memo (1 s) runs on the spawned server's own clock, which no injected clock reaches
  }
  t.true(refusals >= 4);
  t.is(up.seen.answered, answered, 'only what fit was forwarded');
  const billable = answered * w + 3 * ws;
  t.true(billable <= cap, `billable ${billable} ≤ cap ${cap}`);
  t.true(billable >= cap - w, `billable ${billable} ≥ cap − one worst case (${cap - w})`);
  const end = await tokenView(b);
  t.true(end.caps.used >= billable - w, `used ${end.caps.used} counts what was billed`);
  t.true(end.caps.used > end.settled, 'the token\'s caps count the cut streams its usage never settled');
});
