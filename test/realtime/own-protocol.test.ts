/**
 * A provider that brings its own realtime protocol (a RealtimeProtocol object of @keyward/sdk, in a file of
 * KEYWARD_PROVIDERS_DIR, no code in src/): its route's messages are read by it: a refusal answered with its own
 * error event and never forwarded; a `response.create` held under a cap through the host's response book
 * (refused with budget_exhausted when it does not fit, never forwarded) and settled to the usage it read
 * × the file's inline price; the upgrade's query without its key parameters. A route that names a built-in protocol (`'openai-responses'`) still gets it.
 */
import test, { type ExecutionContext } from 'ava';
import { providersDir } from '../support/providers-dir.js';
import { realtimeFixture, type RealtimeFixture } from '../support/realtime-fixture.js';
import { eventually } from '../support/wait.js';
import { BUILT_IN_PROTOCOLS, protocolOf } from '../../src/gateway/realtime/protocol-host.js';
import { geminiLive } from '../../providers/lib/realtime/gemini-live.js';
import { openAIRealtime } from '../../providers/lib/realtime/openai-realtime.js';
import { openAIResponses } from '../../providers/lib/realtime/openai-responses.js';

/** Plain ESM, as an author could write it: reads OpenAI-Realtime-like events, answers refusals in a shape of its own. */
const CHATTER = `
const CREATED = Buffer.from('"response.created"');
const DONE = Buffer.from('"response.done"');
const chatter = {
  name: 'chatter',
  open(host) {
    let model = host.model;
    const worst = () => host.responseWorst([model], () => 100);
    return {
      binaryJson: false,
      get model() { return model; },
      fromClient(message) {
        if (message.type === 'query') return { kind: 'refuse', error: host.errors.invalidRequest('model=' + host.query.get('model') + ' key=' + host.query.get('key')) };
        if (message.type === 'forbidden') return { kind: 'refuse', error: host.errors.invalidRequest('chatter refuses this', 'type'), eventId: message.event_id };
        if (message.type !== 'response.create') return { kind: 'forward' };
        return host.book.forClient(worst(), message.event_id).then(() => ({ kind: 'forward' }), (error) => ({ kind: 'refuse', error, eventId: message.event_id }));
      },
      fromServer(raw) {
        if (raw.indexOf(CREATED) === -1 && raw.indexOf(DONE) === -1) return;
        const event = JSON.parse(raw.toString('utf8'));
        if (event.type === 'response.created') host.book.started(event.response.id, worst());
        if (event.type === 'response.done') host.book.ended(event.response.id, { inputTokens: event.response.usage.input_tokens, outputTokens: event.response.usage.output_tokens });
      },
      errorEvent: (error, eventId) => JSON.stringify({ chatter_error: { code: error.code, message: error.message, about: eventId ?? null } }),
    };
  },
};
export default {
  apiVersion: 1,
  id: 'chatter',
  upstream: 'https://api.chatter.test',
  auth: { kind: 'header', header: 'authorization' },
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  prices: { 'chat-1': { input: 1, output: 2, maxOutput: 4000, contextWindow: 8000 } },
  pricesAsOf: '2026-01-01',
  pricesSource: 'https://chatter.test/pricing',
  routes: [
    { method: 'GET', path: 'v1/talk', websocket: { protocol: chatter, modelQuery: 'model' } },
    { method: 'GET', path: 'v1/responses', websocket: { protocol: 'openai-responses' } },
  ],
};
`;

/** The fixture with the chatter provider beside the built-ins, its credential holding the fake's key, and a minter. */
async function chatterFixture(t: ExecutionContext): Promise<{ f: RealtimeFixture; mint(extra?: Record<string, unknown>): Promise<{ id: string; token: string }> }> {
  const f = await realtimeFixture(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, [], { 'chatter.js': CHATTER }) }, fakeFor: ['chatter'] });
  const created = await f.admin('POST', '/v1/credentials', { provider: 'chatter', api_key: f.key });
  t.is(created.status, 201, JSON.stringify(created.body));
  return {
    f,
    async mint(extra = {}) {
      const r = await f.admin('POST', '/v1/tokens', { credential_id: created.body.id, ttl: '1h', ...extra });
      t.is(r.status, 201, JSON.stringify(r.body));
      return { id: r.body.id, token: r.body.token };
    },
  };
}

const usageOf = async (f: RealtimeFixture, tokenId: string): Promise<Record<string, any>> => (await f.admin('GET', `/v1/tokens/${tokenId}`)).body.usage ?? {};

test('the built-in protocols by name are the objects the providers reference', (t) => {
  t.is(protocolOf('openai-realtime'), openAIRealtime);
  t.is(protocolOf('openai-responses'), openAIResponses);
  t.is(protocolOf('gemini-live'), geminiLive);
  t.is(protocolOf(geminiLive), geminiLive);
  t.deepEqual(Object.keys(BUILT_IN_PROTOCOLS).sort(), ['gemini-live', 'openai-realtime', 'openai-responses']);
  t.true(openAIRealtime.transcribesFromStart!(new URLSearchParams('intent=transcription')));
  t.false(openAIRealtime.transcribesFromStart!(new URLSearchParams('model=gpt-realtime')));
});

test('a provider file\'s own protocol reads its route: its refusal event, holds under a cap, usage × its price', async (t) => {
  const { f, mint } = await chatterFixture(t);
  // $1 of budget: a response's worst case is 8000 in × $1/M + 100 out × $2/M = $0.0082, which fits.
  const tok = await mint({ budget_usd: '1.00' });
  const c = await f.open('v1/talk?model=chat-1', { authorization: `Bearer ${tok.token}` });
  c.send({ type: 'forbidden', event_id: 'ev_1' });
  const refused = await c.waitFor((m) => m.chatter_error !== undefined);
  t.deepEqual(refused.chatter_error, { code: 'invalid_request', message: 'chatter refuses this', about: 'ev_1' });
  c.send({ type: 'response.create', event_id: 'ev_2' });
  await c.waitFor((m) => m.type === 'response.done');
  c.ws.close();
  const got = await f.fake.messages(0, 1);
  t.deepEqual(got.map((m) => m.type), ['response.create'], 'the refused message never reached the provider');
  t.is(f.fake.handshakes[0]!.headers.authorization, `Bearer ${f.key}`);
  // Settled to what the protocol read (1000 in, 500 out) at chat-1's inline price: 1000 × $1/M + 500 × $2/M = $0.002.
  let u: Record<string, any> = {};
  await eventually(async () => {
    u = await usageOf(f, tok.id);
    return u.requests === 1 && u.input_tokens === 1000;
  }, 'the session\'s usage counted');
  t.is(u.output_tokens, 500);
  t.is(Math.round(Number(u.spend_usd) * 1e6), 2000);
});

test('a provider file\'s own protocol: a response that does not fit the cap is refused by its book, never forwarded', async (t) => {
  const { f, mint } = await chatterFixture(t);
  // $0.001 of budget: the worst case ($0.0082) does not fit.
  const tok = await mint({ budget_usd: '0.001' });
  const c = await f.open('v1/talk?model=chat-1', { authorization: `Bearer ${tok.token}` });
  c.send({ type: 'response.create', event_id: 'ev_1' });
  const refused = await c.waitFor((m) => m.chatter_error !== undefined);
  t.is(refused.chatter_error.code, 'budget_exhausted');
  t.is(refused.chatter_error.about, 'ev_1');
  c.send({ type: 'ping' });
  await f.fake.messages(0, 1);
  t.deepEqual(f.fake.received[0]!.map((m) => m.type), ['ping'], 'only what the protocol forwarded reached the provider');
  c.ws.close();
});

test('a protocol reads the upgrade\'s query without the parameters that carry keys', async (t) => {
  const { f, mint } = await chatterFixture(t);
  const tok = await mint();
  const c = await f.open(`v1/talk?model=chat-1&key=${tok.token}`);
  c.send({ type: 'query' });
  const refused = await c.waitFor((m) => m.chatter_error !== undefined);
  t.is(refused.chatter_error.message, 'model=chat-1 key=null', 'the ptok sent as ?key= is not in what the protocol reads');
  c.ws.close();
});

test('a route that names a built-in protocol still gets it (openai-responses, by name)', async (t) => {
  const { f, mint } = await chatterFixture(t);
  const tok = await mint();
  const c = await f.open('v1/responses', { authorization: `Bearer ${tok.token}` });
  c.send({ type: 'response.create', model: 'chat-1', input: 'hi', max_output_tokens: 50 });
  await c.waitFor((m) => m.type === 'response.completed');
  c.ws.close();
  let u: Record<string, any> = {};
  await eventually(async () => {
    u = await usageOf(f, tok.id);
    return u.requests === 1 && u.input_tokens === 1200;
  }, 'the Responses session\'s usage counted');
  t.is(u.output_tokens, 300);
});
