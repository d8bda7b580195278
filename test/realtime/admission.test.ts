/**
 * An upgrade is admitted by the same stages as any proxied request, and refused before the upgrade with the
 * contract's JSON: a missing or bad ptok (401), a path the provider does not declare as a WebSocket route (403),
 * a model outside the token's scope (403, from `?model=`; in a session, `session.update` gets an error event and
 * Gemini's `setup` a 1008), the quota (one request per session: 429 once used up). The subprotocol answered is one
 * the caller offered and never the one carrying its key. Bad input inside a session gets a clear close code:
 * a malformed frame 1002, a non-JSON message 1007, a binary one where JSON text is expected 1003; the gateway
 * goes on serving.
 */
import test from 'ava';
import net from 'node:net';
import { openClient, realtimeFixture } from '../support/realtime-fixture.js';
import { eventually } from '../support/wait.js';

const refusal = async (p: Promise<unknown>) => {
  const err = (await p.then(() => undefined, (e) => e)) as { status: number; body: any; headers: Record<string, string> } | undefined;
  if (!err) throw new Error('the upgrade was not refused');
  return err;
};

test('refused before the upgrade: missing, bad and revoked ptoks 401, undeclared paths 403, models scope 403, quota 429', async (t) => {
  const f = await realtimeFixture(t, { env: { KEYWARD_FREE_PROXY_REQUESTS: '3' } });
  const tok = await f.mint('openai', { models: ['gpt-realtime'] });
  const missing = await refusal(f.open('v1/realtime?model=gpt-realtime'));
  t.is(missing.status, 401);
  t.is(missing.body.error.code, 'invalid_token');
  t.truthy(missing.headers['x-keyward-request-id']);
  t.is((await refusal(f.open('v1/realtime?model=gpt-realtime', { authorization: 'Bearer ptok_notavalidtoken' }))).status, 401);
  const auth = { authorization: `Bearer ${tok.token}` };
  // A path the provider declares for plain requests only, and one it does not declare at all.
  t.is((await refusal(f.open('v1/models', auth))).body.error.code, 'path_not_allowed');
  t.is((await refusal(f.open('v1/realtime/../models', auth))).status, 403);
  t.is((await refusal(f.open('v1/realtime?model=gpt-4o-realtime-preview', auth))).body.error.code, 'model_not_allowed');
  t.is((await refusal(f.open('v1/realtime', auth))).body.error.code, 'model_not_allowed', 'a models-scoped token must name its model');
  t.is(f.fake.handshakes.length, 0, 'nothing refused reached the provider');
  // A plain GET of a WebSocket route is not proxied.
  const plain = await fetch(`${f.origin}/v1/proxy/v1/realtime?model=gpt-realtime`, { headers: auth });
  t.is(plain.status, 403);

  // Quota: one request per session (3 allowed), and the 101 says what is left.
  const sessions = [];
  for (let i = 0; i < 3; i++) sessions.push(await f.open('v1/realtime?model=gpt-realtime', auth));
  const over = await refusal(f.open('v1/realtime?model=gpt-realtime', auth));
  t.is(over.status, 429);
  t.is(over.body.error.code, 'quota_exceeded');
  for (const s of sessions) s.ws.close();
  t.is(f.fake.handshakes.length, 3);
});

test('the subprotocol answered is one the caller offered and never the key-carrying one; the provider never sees it', async (t) => {
  const f = await realtimeFixture(t);
  const tok = await f.mint('openai');
  const c = await f.open('v1/realtime?model=gpt-realtime', {}, ['realtime', `openai-insecure-api-key.${tok.token}`, 'openai-beta.realtime-v1']);
  t.is(c.ws.protocol, 'realtime');
  const hs = f.fake.handshakes[0]!;
  t.is(hs.protocol, 'realtime,openai-beta.realtime-v1');
  t.is(hs.headers.authorization, `Bearer ${f.key}`);
  t.false(JSON.stringify(hs).includes('ptok_'));
  c.ws.close();
  // Offered alone, the key protocol is never answered: the 101 names none (browsers open with '', as RFC 6455 allows).
  const head = await new Promise<string>((resolve) => {
    const s = net.connect(f.app.port, '127.0.0.1', () => s.write(['GET /v1/proxy/v1/realtime?model=gpt-realtime HTTP/1.1', 'Host: x', 'Connection: Upgrade', 'Upgrade: websocket',
      'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', `Sec-WebSocket-Protocol: openai-insecure-api-key.${tok.token}`, '', ''].join('\r\n')));
    let text = '';
    s.on('data', (d) => {
      text += d;
      if (text.includes('\r\n\r\n')) {
        s.destroy();
        resolve(text.slice(0, text.indexOf('\r\n\r\n')));
      }
    });
  });
  t.regex(head, /^HTTP\/1\.1 101 /);
  t.notRegex(head, /sec-websocket-protocol/i);
  t.false(head.includes('ptok_'));
});

test('models scope inside a session: session.update naming another model gets an error event; Gemini setup closes 1008', async (t) => {
  const f = await realtimeFixture(t);
  const tok = await f.mint('openai', { models: ['gpt-realtime'] });
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  c.send({ type: 'session.update', event_id: 'evt_m', session: { type: 'realtime', model: 'gpt-4o-realtime-preview' } });
  const err = await c.waitFor((m) => m.type === 'error');
  t.is(err.error.code, 'model_not_allowed');
  t.is(err.error.event_id, 'evt_m');
  c.send({ type: 'session.update', session: { type: 'realtime', model: 'gpt-realtime' } });
  await c.waitFor((m) => m.type === 'session.updated');
  t.deepEqual((await f.fake.messages(0, 1)).map((m) => m.session.model), ['gpt-realtime']);
  c.ws.close();

  const g = await f.mint('gemini', { models: ['gemini-2.0-flash-live-001'] });
  const live = await f.open('ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent?key=' + g.token);
  live.send({ setup: { model: 'models/gemini-2.5-pro' } });
  const closed = await live.closed;
  t.is(closed.code, 1008);
  t.regex(closed.reason, /^model_not_allowed/);
});

test('bad input: non-JSON 1007, binary where JSON text is expected 1003, a malformed frame 1002, a bad handshake 400; the gateway goes on', async (t) => {
  const f = await realtimeFixture(t);
  const tok = await f.mint('openai');
  const auth = { authorization: `Bearer ${tok.token}` };
  const a = await f.open('v1/realtime?model=gpt-realtime', auth);
  a.send('this is not json');
  t.is((await a.closed).code, 1007);
  const b = await f.open('v1/realtime?model=gpt-realtime', auth);
  b.send('[1,2,3]');
  t.is((await b.closed).code, 1007);
  const c = await f.open('v1/realtime?model=gpt-realtime', auth);
  c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
  t.is((await c.closed).code, 1003);
  // A frame with reserved bits set (and unmasked, as no client may send): ws answers 1002.
  const d = await f.open('v1/realtime?model=gpt-realtime', auth);
  const raw = (d.ws as unknown as { _socket: net.Socket })._socket;
  raw.write(Buffer.from([0xf1, 0x02, 0x7b, 0x7d]));
  t.is((await d.closed).code, 1002);
  // A handshake without a key: 400 in the contract's shape, no upgrade.
  const bad = await new Promise<string>((resolve) => {
    const s = net.connect(f.app.port, '127.0.0.1', () => s.write(`GET /v1/proxy/v1/realtime?model=gpt-realtime HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nAuthorization: Bearer ${tok.token}\r\n\r\n`));
    let text = '';
    s.on('data', (d) => (text += d));
    s.on('close', () => resolve(text));
  });
  t.regex(bad, /^HTTP\/1\.1 400 /);
  t.regex(bad, /"code":"bad_request"/);
  // Still serving: a good session works.
  const e = await f.open('v1/realtime?model=gpt-realtime', auth);
  e.send({ type: 'response.create' });
  await e.waitFor((m) => m.type === 'response.done');
  e.ws.close();
  t.is((await fetch(`${f.origin}/healthz`)).status, 200);
  // The provider's own closes: sessions a, b, c, d were all closed on its side too.
  for (let i = 0; i < 4; i++) await waitClosed(f.fake.sockets[i]!);
  t.deepEqual(f.fake.sockets.slice(0, 4).map((s) => s.readyState), [3, 3, 3, 3]);
});

/** The provider's side closing is a real event: waited for with a generous bound (a busy machine is slow). */
const waitClosed = (ws: { readyState: number }): Promise<number> => eventually(() => ws.readyState === 3, 'the upstream socket closed');

test('an upgrade the provider refuses is passed back as it answered, masked', async (t) => {
  const f = await realtimeFixture(t);
  const wrong = (await f.admin('POST', '/v1/credentials', { provider: 'openai', api_key: 'sk-wrong-key-0123456789' })).body.id;
  const tok = await f.admin('POST', '/v1/tokens', { credential_id: wrong, ttl: '1h' });
  const err = await refusal(openClient(`${f.proxy}v1/realtime?model=gpt-realtime`, { authorization: `Bearer ${tok.body.token}` }));
  t.is(err.status, 401);
  t.is(err.body.error.code, 'invalid_api_key');
  // The provider echoed the key it was given (as OpenAI's message does): the caller sees stars.
  t.is(err.body.error.message, `Incorrect API key provided: ${'*'.repeat('sk-wrong-key-0123456789'.length)}`);
  t.truthy(err.headers['x-keyward-request-id']);
});
