/**
 * The catalog's part of realtime sessions: websocket routes match only upgrades (and plain routes only plain
 * requests), the model comes from the route's `modelQuery` when named once; a provider file's `websocket`
 * declaration is checked at load; audio tokens are priced apart, and a worst case takes the dearer of text and
 * audio on each side.
 */
import test from 'ava';
import { compileRoute, matchRoute } from '../../src/catalog/path.js';
import { priceEntry, usageCost, worstCaseCost } from '../../src/pricing/prices.js';
import { validateProvider } from '../../src/catalog/provider-check.js';

const routes = [
  compileRoute({ method: 'GET', path: 'v1/models' }),
  compileRoute({ method: 'GET', path: 'v1/realtime', websocket: { protocol: 'openai-realtime', modelQuery: 'model' } }),
];

test('websocket routes match upgrades only, plain routes plain requests only; the model from the query, named once', (t) => {
  t.is(matchRoute(routes, 'GET', 'v1/realtime'), undefined, 'a plain GET of a websocket route');
  t.is(matchRoute(routes, 'GET', 'v1/models', 'x=1'), undefined, 'an upgrade of a plain route');
  t.deepEqual(matchRoute(routes, 'GET', 'v1/realtime', 'model=gpt-realtime')?.params, { model: 'gpt-realtime' });
  t.deepEqual(matchRoute(routes, 'GET', 'v1/realtime', 'model=a&model=b')?.params, {}, 'twice: ambiguous, no model');
  t.deepEqual(matchRoute(routes, 'GET', 'v1/realtime', '')?.params, {});
  t.truthy(matchRoute(routes, 'GET', 'v1/models'));
});

test('a provider file\'s websocket route is checked at load', (t) => {
  const base = { id: 'rt', upstream: 'https://rt.example', auth: { kind: 'header', header: 'x-key' } };
  const load = (route: Record<string, unknown>) => () => validateProvider('rt.js', { ...base, routes: [route] });
  t.notThrows(load({ method: 'GET', path: 'v1/realtime', websocket: { protocol: 'openai-realtime', modelQuery: 'model' } }));
  t.throws(load({ method: 'POST', path: 'v1/realtime', websocket: { protocol: 'openai-realtime' } }), { message: /method GET/ });
  t.throws(load({ method: 'GET', path: 'v1/realtime', websocket: { protocol: 'sip' } }), { message: /protocol must be one of/ });
  // A provider's own protocol: an object with a name and `open` (and, optionally, `transcribesFromStart`).
  t.notThrows(load({ method: 'GET', path: 'v1/realtime', websocket: { protocol: { name: 'sip', open: () => ({}) } } }));
  for (const bad of [{ name: 'sip' }, { open: () => ({}) }, { name: '', open: () => ({}) }, { name: 'sip', open: () => ({}), transcribesFromStart: true }, [], null]) {
    t.throws(load({ method: 'GET', path: 'v1/realtime', websocket: { protocol: bad } }), { message: /protocol must be one of .*RealtimeProtocol/ });
  }
  t.throws(load({ method: 'GET', path: 'v1/realtime', websocket: { protocol: 'gemini-live', extra: 1 } }), { message: /unknown key/ });
  t.notThrows(load({ method: 'GET', path: 'v1/realtime', websocket: { protocol: 'openai-realtime', inputAudioTokensPerSecond: 20 } }));
  for (const bad of [0, 2.5, '20', 1001]) {
    t.throws(load({ method: 'GET', path: 'v1/realtime', websocket: { protocol: 'openai-realtime', inputAudioTokensPerSecond: bad } }), { message: /inputAudioTokensPerSecond must be/ });
  }
  t.throws(load({ method: 'GET', path: 'v1/{model}/live', websocket: { protocol: 'gemini-live', modelQuery: 'model' } }), { message: /both name the model/ });
});

test('audio tokens priced apart; the worst case takes the dearer price of each side', (t) => {
  const p = priceEntry('rt', { input: 4, cachedInput: 0.4, output: 16, audio: { input: 32, cachedInput: 0.4, output: 64 } }, 'test');
  // 1000 in (200 cached, of which 100 audio; 400 audio), 500 out (400 audio), in µ$.
  const cost = usageCost(p, { inputTokens: 1000, cachedInputTokens: 200, audioInputTokens: 400, cachedAudioInputTokens: 100, outputTokens: 500, audioOutputTokens: 400 });
  t.is(cost, 500 * 4 + 100 * 0.4 + 300 * 32 + 100 * 0.4 + 100 * 16 + 400 * 64);
  // Without audio prices, audio costs what text costs.
  const text = priceEntry('t', { input: 4, output: 16 }, 'test');
  t.is(usageCost(text, { inputTokens: 1000, audioInputTokens: 400, outputTokens: 500, audioOutputTokens: 400 }), 1000 * 4 + 500 * 16);
  t.is(worstCaseCost(p, 1000, 100), 1000 * 32 + 100 * 64);
  t.throws(() => priceEntry('x', { input: 1, output: 1, audio: { input: 1, output: 1, cached: 1 } as never }, 'test'), { message: /audio: only the fields/ });
});
