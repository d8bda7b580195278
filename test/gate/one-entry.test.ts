/**
 * One entry (src/gateway/entry/gateway.ts): HTTP/1.1, h2c and a WebSocket upgrade build their context and
 * exchange by the same code and pass the same gate, so each refusal is the same answer over all three (status,
 * code, the gateway's and the stages' headers) and nothing reaches the provider: no token or an unknown one (401),
 * a path off the allow-list or outside the token's `paths` (403), a model outside its `models` (403: the path's
 * model over HTTP, `?model=` on the upgrade), its `rate_limit`, `max_concurrent` and `max_requests`, and the
 * organisation's free quota (429). The limits are one count across the transports: a unit taken over one is
 * missing over the others. A token's `budget_usd` refuses a request by its body's worst case (429
 * budget_exhausted); an upgrade has no body and passes, and by the contract its session's responses are held one by
 * one: the first that does not fit is refused with the same code (here; every case in test/realtime/budget.test.ts).
 */
import test, { type ExecutionContext } from 'ava';
import { newToken } from '../../src/ids.js';
import { realtimeFixture, type Client, type RealtimeFixture } from '../support/realtime-fixture.js';
import { send, type Transport } from '../support/transport.js';

type Via = Transport | 'ws';
const VIAS: readonly Via[] = ['h1', 'h2c', 'ws'];

/** What a transport answered: a refusal's status, code and the headers every answer should agree on. */
interface Answer {
  status: number;
  code: string | undefined;
  /** Which of the headers a refusal may carry it has (their values differ by request: ids, seconds). */
  carries: string[];
  /** The upgrade was accepted (its session, still open). */
  session?: Client;
}

const HEADERS = ['x-keyward-request-id', 'retry-after', 'www-authenticate', 'x-keyward-quota-remaining', 'content-type'];
const carried = (h: Record<string, unknown>): string[] => HEADERS.filter((name) => h[name] !== undefined);

/**
 * One attempt over `via`: the upgrade opens `ws` (a websocket route); HTTP/1.1 and h2c send `http` (a plain
 * route of the same provider). Both paths are after /v1/proxy/.
 */
async function attempt(f: RealtimeFixture, via: Via, ws: string, http: string, headers: Record<string, string>): Promise<Answer> {
  if (via === 'ws') {
    try {
      const session = await f.open(ws, headers);
      return { status: 101, code: undefined, carries: [], session };
    } catch (err) {
      const refused = err as { status: number; body?: { error?: { code?: string } }; headers: Record<string, unknown> };
      return { status: refused.status, code: refused.body?.error?.code, carries: carried(refused.headers) };
    }
  }
  const answer = await send(f.origin, { transport: via, method: 'GET', path: `/v1/proxy/${http}`, headers });
  return { status: answer.status, code: answer.body?.error?.code, carries: carried(answer.headers) };
}

/** What has reached the provider so far: plain requests and handshakes. */
const reached = (f: RealtimeFixture): number => f.fake.requests.length + f.fake.handshakes.length;

/** Every transport refuses the same way, and the provider sees none of it. */
async function refusedAlike(t: ExecutionContext, f: RealtimeFixture, label: string, status: number, code: string, ws: string, http: string, headers: Record<string, string>): Promise<void> {
  const before = reached(f);
  const answers: Answer[] = [];
  for (const via of VIAS) answers.push(await attempt(f, via, ws, http, headers));
  for (const [i, a] of answers.entries()) {
    a.session?.ws.close();
    t.like(a, { status, code }, `${label} over ${VIAS[i]}`);
    t.true(a.carries.includes('x-keyward-request-id'), `${label} over ${VIAS[i]}: the request id`);
  }
  t.deepEqual(answers.map((a) => a.carries), answers.map(() => answers[0]!.carries), `${label}: the same headers over every transport`);
  t.is(reached(f), before, `${label}: nothing reached the provider`);
}

const REALTIME = 'v1/realtime?model=gpt-realtime';
const MODEL = 'v1/models/gpt-realtime';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

test('who and where: no token, an unknown one, a path off the allow-list, outside `paths`, outside `models`: one answer over h1, h2c and an upgrade', async (t) => {
  const f = await realtimeFixture(t);
  await refusedAlike(t, f, 'no token', 401, 'invalid_token', REALTIME, MODEL, {});
  await refusedAlike(t, f, 'an unknown token', 401, 'invalid_token', REALTIME, MODEL, bearer(newToken('ptok')));
  const plain = await f.mint('openai');
  await refusedAlike(t, f, 'off the allow-list', 403, 'path_not_allowed', 'v1/nowhere?model=gpt-realtime', 'v1/nowhere', bearer(plain.token));
  const embeddings = await f.mint('openai', { paths: ['v1/embeddings'] });
  await refusedAlike(t, f, 'outside paths', 403, 'path_not_allowed', REALTIME, MODEL, bearer(embeddings.token));
  const scoped = await f.mint('openai', { models: ['gpt-realtime'] });
  await refusedAlike(t, f, 'outside models', 403, 'model_not_allowed', 'v1/realtime?model=gpt-4o-realtime-preview', 'v1/models/gpt-4o-realtime-preview', bearer(scoped.token));

  // A route whose query names the model: a models-scoped upgrade naming none is refused by the same stage.
  const unnamed = await attempt(f, 'ws', 'v1/realtime', MODEL, bearer(scoped.token));
  t.like(unnamed, { status: 403, code: 'model_not_allowed' });

  // The controls: the same tokens, where they may go, reach the provider over every transport.
  for (const via of VIAS) {
    const a = await attempt(f, via, REALTIME, MODEL, bearer(scoped.token));
    a.session?.ws.close();
    t.is(a.status, via === 'ws' ? 101 : 404, `the control over ${via} (the fake answers plain requests 404)`);
  }
  t.deepEqual(f.fake.requests, ['GET /v1/models/gpt-realtime', 'GET /v1/models/gpt-realtime']);
  t.is(f.fake.handshakes.length, 1);
});

test('limits are one count across transports: rate_limit, max_concurrent and max_requests refuse h1, h2c and an upgrade alike', async (t) => {
  const f = await realtimeFixture(t);
  // One unit of each, spent over one transport: the next request over any is refused.
  const rate = await f.mint('openai', { rate_limit: 1 });
  t.is((await attempt(f, 'h2c', REALTIME, MODEL, bearer(rate.token))).status, 404);
  await refusedAlike(t, f, 'rate_limit', 429, 'rate_limited', REALTIME, MODEL, bearer(rate.token));

  const once = await f.mint('openai', { max_requests: 1 });
  const first = await attempt(f, 'ws', REALTIME, MODEL, bearer(once.token));
  t.is(first.status, 101);
  first.session!.ws.close();
  await refusedAlike(t, f, 'max_requests', 429, 'token_exhausted', REALTIME, MODEL, bearer(once.token));

  // An open session holds its token's one slot until it ends.
  const single = await f.mint('openai', { max_concurrent: 1 });
  const holding = await attempt(f, 'ws', REALTIME, MODEL, bearer(single.token));
  t.is(holding.status, 101);
  await refusedAlike(t, f, 'max_concurrent', 429, 'concurrency_exceeded', REALTIME, MODEL, bearer(single.token));
  holding.session!.ws.close();
  await holding.session!.closed;
});

test("the organisation's free quota: one request per session or HTTP request, refused alike once used up", async (t) => {
  const f = await realtimeFixture(t, { env: { KEYWARD_FREE_PROXY_REQUESTS: '2' } });
  const tok = await f.mint('openai');
  t.is((await attempt(f, 'h1', REALTIME, MODEL, bearer(tok.token))).status, 404);
  const session = await attempt(f, 'ws', REALTIME, MODEL, bearer(tok.token));
  t.is(session.status, 101);
  session.session!.ws.close();
  await refusedAlike(t, f, 'quota', 429, 'quota_exceeded', REALTIME, MODEL, bearer(tok.token));
});

test('budget_usd: the same stage refuses a body whose worst case does not fit over h1 and h2c; an upgrade, which has no body, opens and its first response.create is refused the same way (contract: a session is gated per response); nothing forwarded', async (t) => {
  const f = await realtimeFixture(t);
  const tiny = await f.mint('openai', { budget_usd: '0.000001' });
  const body = JSON.stringify({ model: 'gpt-4o', max_tokens: 1000, messages: [{ role: 'user', content: 'hello' }] });
  for (const transport of ['h1', 'h2c'] as const) {
    const a = await send(f.origin, { transport, path: '/v1/proxy/v1/chat/completions', headers: bearer(tiny.token), body });
    t.like({ status: a.status, code: a.body?.error?.code }, { status: 429, code: 'budget_exhausted' }, transport);
    t.truthy(a.headers['x-keyward-request-id']);
  }
  t.is(reached(f), 0, 'nothing reached the provider');
  const upgrade = await attempt(f, 'ws', REALTIME, MODEL, bearer(tiny.token));
  t.is(upgrade.status, 101, 'the upgrade passed the same gate: nothing to price yet');
  const c = upgrade.session!;
  c.send({ type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null } } } });
  await c.waitFor((m) => m.type === 'session.updated');
  c.send({ type: 'response.create', event_id: 'evt_refused' });
  const refusal = await c.waitFor((m) => m.type === 'error');
  t.like(refusal.error, { code: 'budget_exhausted', event_id: 'evt_refused' });
  // A free message after it arrives next: the refused one was never between them.
  c.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] } });
  const forwarded = await f.fake.messages(0, 2);
  t.deepEqual(forwarded.map((m) => m.type), ['session.update', 'conversation.item.create'], 'the refused response.create never reached the provider');
  c.ws.close();
});
