/**
 * Spend caps on realtime sessions (contract, "Realtime sessions over WebSocket"): every response that can start
 * has its worst case (context window in, the session's output cap out, at the dearer of text and audio prices)
 * held first; `response.done` settles to the usage × price; a `response.create` that does not fit is answered
 * with an error event (code budget_exhausted) and never forwarded; with server turn detection on, input that
 * could let the server start a response it cannot cover ends the session (error event, 1008) before the
 * provider gets it; with `turn_detection: null` only `response.create` is gated. The same for the org's cap,
 * Gemini Live (1008 with the reason) and the Responses API over WebSocket.
 */
import test from 'ava';
import { priceEntry, usageCost, worstCaseCost } from '../../src/pricing/prices.js';
import { realtimeUsage } from '../../providers/lib/realtime/openai-realtime.js';
import { shippedPrice } from '../support/shipped-prices.js';
import { realtimeFixture, type Client, type RealtimeFixture } from '../support/realtime-fixture.js';
import { eventually } from '../support/wait.js';

const RT = priceEntry('gpt-realtime', shippedPrice('openai', 'gpt-realtime'), 'test');
/** One gpt-realtime response's worst case: 32,000 tokens in at the audio price, 4,096 out at the audio price. */
const WORST = worstCaseCost(RT, 32_000, 4_096);
const usd = (micros: number) => (micros / 1e6).toFixed(6);

async function spent(f: RealtimeFixture, tokenId: string): Promise<number> {
  return Math.round(Number((await f.admin('GET', `/v1/tokens/${tokenId}`)).body.usage?.spend_usd ?? 0) * 1e6);
}

/** Settlement follows the provider's response.done: a real event, waited for with a generous bound (a busy machine is slow). */
async function settled(f: RealtimeFixture, tokenId: string, micros: number): Promise<void> {
  await eventually(async () => (await spent(f, tokenId)) === micros, `${micros} µ$ settled`).catch(() => undefined); // the caller's assertion says what it was
}

const item = (text: string) => ({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } });
const turnDetectionOff = { type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null } } } };

async function sessionUpdated(c: Client, n: number): Promise<void> {
  await c.waitFor(() => c.received.filter((m) => m.type === 'session.updated').length >= n);
}

test('turn_detection null: response.create is held first; one that does not fit gets budget_exhausted and is not forwarded; spend = usage × price', async (t) => {
  const f = await realtimeFixture(t);
  const budget = WORST + 20_000; // one response's worst case fits, two do not
  const tok = await f.mint('openai', { budget_usd: usd(budget) });
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  c.send(turnDetectionOff);
  await sessionUpdated(c, 1);
  c.send({ type: 'response.create', event_id: 'evt_first' });
  await c.waitFor((m) => m.type === 'response.done');
  const cost = usageCost(RT, realtimeUsage(f.fake.usage)!);
  await settled(f, tok.id, cost);
  t.is(await spent(f, tok.id), cost, 'settled to the reported usage at the realtime prices');

  // budget - cost < WORST: refused, not forwarded.
  c.send({ type: 'response.create', event_id: 'evt_second' });
  const refusal = await c.waitFor((m) => m.type === 'error');
  t.is(refusal.error.code, 'budget_exhausted');
  t.is(refusal.error.type, 'rate_limit');
  t.is(refusal.error.event_id, 'evt_second');
  t.deepEqual(refusal.error.detail, { cap: 'token.budget_usd', needed_usd: usd(WORST), left_usd: usd(budget - cost) }, 'what it needed and what was left');
  // A smaller output cap makes a smaller worst case, which fits.
  c.send({ type: 'response.create', event_id: 'evt_small', response: { max_output_tokens: 100 } });
  await c.waitFor((m) => m.type === 'response.done' && m.response.id === 'resp_2');
  const got = await f.fake.messages(0, 3);
  t.deepEqual(got.filter((m) => m.type === 'response.create').map((m) => m.event_id), ['evt_first', 'evt_small']);
  await settled(f, tok.id, 2 * cost);
  t.is(await spent(f, tok.id), 2 * cost);
  c.ws.close();
});

test('server turn detection on and no room for one response: audio gets an error event and the session closes 1008 before the provider has it', async (t) => {
  const f = await realtimeFixture(t);
  const tok = await f.mint('openai', { budget_usd: usd(WORST - 1) });
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  await c.waitFor((m) => m.type === 'session.created');
  c.send({ type: 'input_audio_buffer.append', audio: 'AAAA' });
  const closed = await c.closed;
  t.is(closed.code, 1008);
  t.regex(closed.reason, /^budget_exhausted/);
  t.is(c.received.find((m) => m.type === 'error')?.error.code, 'budget_exhausted');
  t.deepEqual(f.fake.received[0], [], 'the provider never got the audio');
  t.is(await spent(f, tok.id), 0);
});

test('server turns: the next server-started response is held ahead; when it cannot be after one ran, the session closes 1008 before more audio goes', async (t) => {
  const f = await realtimeFixture(t);
  const tok = await f.mint('openai', { budget_usd: usd(WORST + 20_000) });
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  await c.waitFor((m) => m.type === 'session.created');
  c.send({ type: 'input_audio_buffer.append', audio: 'AAAA' });
  c.send({ type: 'input_audio_buffer.commit' }); // the fake's VAD starts a response
  await c.waitFor((m) => m.type === 'response.done');
  const cost = usageCost(RT, realtimeUsage(f.fake.usage)!);
  await settled(f, tok.id, cost);
  c.send({ type: 'input_audio_buffer.append', audio: 'BBBB' });
  const closed = await c.closed;
  t.is(closed.code, 1008);
  t.is(c.received.filter((m) => m.type === 'error').map((m) => m.error.code).join(), 'budget_exhausted');
  t.deepEqual(f.fake.received[0]!.map((m) => m.type), ['input_audio_buffer.append', 'input_audio_buffer.commit'], 'the uncovered audio never reached the provider');
  t.is(await spent(f, tok.id), cost, 'the server-started response settled to its usage');
});

test('the organisation\'s monthly cap holds the same way', async (t) => {
  const f = await realtimeFixture(t);
  t.is((await f.admin('PATCH', '/v1/orgs/self', { spend_limit_usd: usd(WORST - 1) })).status, 200);
  const tok = await f.mint('openai');
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  c.send(turnDetectionOff);
  await sessionUpdated(c, 1);
  c.send({ type: 'response.create' });
  t.is((await c.waitFor((m) => m.type === 'error')).error.code, 'budget_exhausted');
  t.false(f.fake.received[0]!.some((m) => m.type === 'response.create'));
  c.ws.close();
});

test('nested budgets hold on a session: a team\'s token is held under the team\'s budget, a member\'s under the member\'s, and settles on each', async (t) => {
  const f = await realtimeFixture(t);
  const team = await f.admin('POST', '/v1/teams', { name: 'voice', credentials: [f.credentials.openai], budget_usd: usd(WORST + 20_000), max_ttl: '1h' });
  t.is(team.status, 201, JSON.stringify(team.body));
  const member = 'usr_realtimeMember01';
  t.is((await f.admin('PATCH', `/v1/members/${member}`, { budget_usd: usd(WORST - 1) })).status, 200);

  // The team's token: one response fits the team's budget (no budget of its own), a second does not.
  const tok = await f.mint('openai', { team_id: team.body.id });
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  c.send(turnDetectionOff);
  await sessionUpdated(c, 1);
  c.send({ type: 'response.create', event_id: 'evt_first' });
  await c.waitFor((m) => m.type === 'response.done');
  const cost = usageCost(RT, realtimeUsage(f.fake.usage)!);
  await settled(f, tok.id, cost);
  t.is(await spent(f, tok.id), cost);
  const teamView = await f.admin('GET', `/v1/teams/${team.body.id}`);
  t.is(Math.round(Number(teamView.body.spend.used) * 1e6), cost, 'settled on the team');
  c.send({ type: 'response.create', event_id: 'evt_second' });
  const refusal = await c.waitFor((m) => m.type === 'error');
  t.is(refusal.error.code, 'budget_exhausted');
  t.is(refusal.error.detail.cap, 'team.budget_usd', 'the team\'s cap refused it');
  t.false(f.fake.received[0]!.filter((m) => m.type === 'response.create').some((m) => m.event_id === 'evt_second'), 'never forwarded');
  c.ws.close();

  // A member's token whose member budget cannot cover one response: refused before the provider has it.
  const personal = await f.mint('openai', { member_id: member });
  const m = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${personal.token}` });
  m.send(turnDetectionOff);
  await sessionUpdated(m, 1);
  m.send({ type: 'response.create' });
  const memberRefusal = await m.waitFor((x) => x.type === 'error');
  t.is(memberRefusal.error.code, 'budget_exhausted');
  t.is(memberRefusal.error.detail.cap, 'member.budget_usd');
  t.false(f.fake.received[1]!.some((x) => x.type === 'response.create'));
  m.ws.close();
});

test('Gemini Live: a turn that does not fit closes the session with 1008 and the reason, unforwarded', async (t) => {
  const f = await realtimeFixture(t);
  const live = priceEntry('gemini-2.0-flash-live-001', shippedPrice('gemini', 'gemini-2.0-flash-live-001'), 'test');
  const tok = await f.mint('gemini', { budget_usd: usd(worstCaseCost(live, 1_048_576, 8_192) - 1) });
  const c = await f.open('ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent', { 'x-goog-api-key': tok.token });
  c.send({ setup: { model: 'models/gemini-2.0-flash-live-001', realtimeInputConfig: { automaticActivityDetection: { disabled: true } } } });
  await c.waitFor((m) => m.setupComplete !== undefined);
  c.send({ clientContent: { turns: [{ role: 'user', parts: [{ text: 'hi' }] }], turnComplete: true } });
  const closed = await c.closed;
  t.is(closed.code, 1008);
  t.regex(closed.reason, /^budget_exhausted/);
  t.deepEqual(f.fake.received[0]!.map((m) => Object.keys(m)[0]), ['setup']);
});

test('Responses API over WebSocket: each response.create held like an HTTP request, settled at response.completed; models scope', async (t) => {
  const f = await realtimeFixture(t);
  const mini = priceEntry('gpt-5-mini', shippedPrice('openai', 'gpt-5-mini'), 'test');
  const body = { type: 'response.create', model: 'gpt-5-mini', input: [{ role: 'user', content: 'hi' }], max_output_tokens: 1000 };
  const worst = worstCaseCost(mini, Buffer.byteLength(JSON.stringify(body)) + 1024, 1000);
  const tok = await f.mint('openai', { budget_usd: usd(worst + 100), models: ['gpt-5-mini'] });
  const c = await f.open('v1/responses', { authorization: `Bearer ${tok.token}`, 'openai-beta': 'responses_websockets=2026-02-04' });
  c.send(body);
  await c.waitFor((m) => m.type === 'response.completed');
  const cost = usageCost(mini, { inputTokens: 1200, cachedInputTokens: 200, outputTokens: 300 });
  await settled(f, tok.id, cost);
  t.is(await spent(f, tok.id), cost);
  c.send(body); // what is left (worst + 100 - cost) is less than the worst case
  t.is((await c.waitFor((m) => m.type === 'error')).error.code, 'budget_exhausted');
  c.send({ ...body, model: 'gpt-5' });
  await c.waitFor(() => c.received.filter((m) => m.type === 'error').length === 2);
  t.is(c.received.filter((m) => m.type === 'error')[1]!.error.code, 'model_not_allowed');
  t.is(f.fake.received[0]!.length, 1, 'only the request that fit reached the provider');
  t.is(f.fake.handshakes[0]!.headers['openai-beta'], 'responses_websockets=2026-02-04');
  c.ws.close();
});
