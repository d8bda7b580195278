/**
 * `tokens_per_minute` on realtime sessions (contract, "Realtime sessions over WebSocket": "Spend and
 * tokens_per_minute: every response that can start has its worst case reserved first"): a response's worst
 * case (the context window in, the session's output cap out: 32,000 + 4,096 tokens for gpt-realtime here) is
 * held in the token's minute window before its `response.create` is forwarded, and settled to the tokens the
 * provider reported at `response.done`; one that does not fit gets an error event
 * (tokens_per_minute_exceeded) and never reaches the provider. A team's `tokens_per_minute` holds its tokens'
 * sessions the same way, one window shared by the team's tokens.
 */
import test from 'ava';
import { realtimeUsage } from '../../providers/lib/realtime/openai-realtime.js';
import { realtimeFixture, type Client } from '../support/realtime-fixture.js';

/** One gpt-realtime response's worst case in tokens, as test/realtime/budget.test.ts prices it. */
const WORST_TOKENS = 32_000 + 4_096;

const turnDetectionOff = { type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null } } } };

async function ready(c: Client): Promise<void> {
  c.send(turnDetectionOff);
  await c.waitFor((m) => m.type === 'session.updated');
}

test('a response whose worst case does not fit the minute gets tokens_per_minute_exceeded and is not forwarded', async (t) => {
  const f = await realtimeFixture(t);
  const tok = await f.mint('openai', { tokens_per_minute: WORST_TOKENS - 1 });
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  await ready(c);
  c.send({ type: 'response.create', event_id: 'evt_big' });
  const refusal = await c.waitFor((m) => m.type === 'error');
  t.is(refusal.error.code, 'tokens_per_minute_exceeded');
  t.is(refusal.error.event_id, 'evt_big');
  // A smaller output cap makes a worst case that fits: forwarded.
  c.send({ type: 'response.create', event_id: 'evt_small', response: { max_output_tokens: 100 } });
  await c.waitFor((m) => m.type === 'response.done');
  const got = await f.fake.messages(0, 2);
  t.deepEqual(got.filter((m) => m.type === 'response.create').map((m) => m.event_id), ['evt_small']);
  c.ws.close();
});

test('each response is settled to the tokens it used: a second worst case fits only because the first gave back what it did not use', async (t) => {
  const f = await realtimeFixture(t);
  // Two worst cases less one token: without settlement the second response could not be held.
  const tok = await f.mint('openai', { tokens_per_minute: 2 * WORST_TOKENS - 1 });
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  await ready(c);
  c.send({ type: 'response.create', event_id: 'evt_1' });
  await c.waitFor((m) => m.type === 'response.done');
  const used = realtimeUsage(f.fake.usage)!;
  t.true(used.inputTokens + used.outputTokens < WORST_TOKENS - 1, 'the fake reports less than a worst case');
  c.send({ type: 'response.create', event_id: 'evt_2' });
  await c.waitFor((m) => m.type === 'response.done' && m.response.id === 'resp_2');
  t.false(c.received.some((m) => m.type === 'error'), 'no refusal');
  const got = await f.fake.messages(0, 3);
  t.deepEqual(got.filter((m) => m.type === 'response.create').map((m) => m.event_id), ['evt_1', 'evt_2']);
  c.ws.close();
});

test("a team's tokens_per_minute holds its tokens' sessions: one window for the team, named in the refusal; a token outside it is not held", async (t) => {
  const f = await realtimeFixture(t);
  // Room for one worst case and a small response, not two worst cases.
  const team = await f.admin('POST', '/v1/teams', { name: 'voice', credentials: [f.credentials.openai], tokens_per_minute: WORST_TOKENS + 1_000, max_ttl: '1h' });
  t.is(team.status, 201, JSON.stringify(team.body));
  const first = await f.mint('openai', { team_id: team.body.id });
  const second = await f.mint('openai', { team_id: team.body.id });
  const a = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${first.token}` });
  await ready(a);
  a.send({ type: 'response.create', event_id: 'evt_a' });
  await a.waitFor((m) => m.type === 'response.done');
  const used = realtimeUsage(f.fake.usage)!;
  // The second token's worst case does not fit what the first left of the team's minute.
  const b = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${second.token}` });
  await ready(b);
  b.send({ type: 'response.create', event_id: 'evt_b' });
  const refusal = await b.waitFor((m) => m.type === 'error');
  t.is(refusal.error.code, 'tokens_per_minute_exceeded');
  t.is(refusal.error.detail.cap, 'team.tokens_per_minute');
  t.is(refusal.error.detail.left_tokens, WORST_TOKENS + 1_000 - used.inputTokens - used.outputTokens, 'the first response was settled to what it used');
  t.false(f.fake.received[1]!.some((m) => m.type === 'response.create'), 'never forwarded');
  // A token of the same credential outside the team is not held by the team's window.
  const outside = await f.mint('openai');
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${outside.token}` });
  await ready(c);
  c.send({ type: 'response.create', event_id: 'evt_c' });
  await c.waitFor((m) => m.type === 'response.done');
  t.false(c.received.some((m) => m.type === 'error'));
  for (const s of [a, b, c]) s.ws.close();
});
