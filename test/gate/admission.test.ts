/**
 * The gate (src/gateway/entry/admission.ts): whether a body follows is read from the request stream, so every
 * stage that reads the body (the `models` scope, a token's `budget_usd`, an organisation's
 * `spend_limit_usd`, an operator plugin that declares body fields) sees it the same way over HTTP/1.1 and
 * h2c, with or without content-length (chunked, bare DATA frames), whole or trickled: a body it must refuse
 * is refused, nothing forwarded; a body it accepts reaches the provider byte for byte. A stage whose need
 * for the body appears after the body stage ran is not forwarded unread: the gate refuses it (503).
 * (Issue 23: an h2c request without content-length went through a $0.00001 budget.)
 */
import test from 'ava';
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { api, createCredential, createOrg, mintToken, ROOT, startApp, tempDir } from '../support/app.js';
import { providersDir } from '../support/providers-dir.js';
import { startUsageUpstream } from '../support/budget.js';
import { send, type Transport } from '../support/transport.js';

const CHAT = '/v1/proxy/v1/chat/completions';

function pluginsDir(t: import('ava').ExecutionContext, names: string[]): string {
  const dir = tempDir(t, 'keyward-plugins-');
  for (const n of names) copyFileSync(path.join(ROOT, 'test/support/plugins', `${n}.js`), path.join(dir, `${n}.js`));
  return dir;
}

async function gate(t: import('ava').ExecutionContext) {
  const up = await startUsageUpstream();
  t.teardown(() => up.close());
  const app = await startApp(t, {
    env: {
      KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']),
      KEYWARD_UPSTREAM_PRICED: up.url,
      KEYWARD_PLUGINS_DIR: pluginsDir(t, ['tier', 'latecap']),
      KEYWARD_PLUGINS: 'logging,tier,latecap',
    },
  });
  const org = await createOrg(app, 'gate');
  const credential = await createCredential(app, org, 'priced', 'sk-priced-0123456789');
  // An organisation whose monthly cap fits nothing.
  const capped = await createOrg(app, 'capped');
  const cappedCredential = await createCredential(app, capped, 'priced', 'sk-priced-0123456789');
  t.is((await api(app, 'PATCH', '/v1/orgs/self', { token: capped.token, body: { spend_limit_usd: '0.000001' } })).status, 200);
  const tokens = {
    plain: await mintToken(app, org, credential, '1h'),
    models: await mintToken(app, org, credential, '1h', { models: ['pm-1'] }),
    tiny: await mintToken(app, org, credential, '1h', { budget_usd: '0.00001' }),
    rich: await mintToken(app, org, credential, '1h', { budget_usd: '1000' }),
    orgCapped: await mintToken(app, capped, cappedCredential, '1h'),
  };
  return { app, up, tokens };
}

const body = (over: Record<string, unknown>) => JSON.stringify({ model: 'pm-1', max_tokens: 100000, messages: [{ role: 'user', content: `hello ${'x'.repeat(200)}` }], ...over });

const FRAMINGS = [
  { transport: 'h1', length: true, pieces: 1 }, { transport: 'h1', length: false, pieces: 1 },
  { transport: 'h1', length: true, pieces: 6 }, { transport: 'h1', length: false, pieces: 6 },
  { transport: 'h2c', length: true, pieces: 1 }, { transport: 'h2c', length: false, pieces: 1 },
  { transport: 'h2c', length: true, pieces: 6 }, { transport: 'h2c', length: false, pieces: 6 },
] as const;

const label = (f: (typeof FRAMINGS)[number]) => `${f.transport} ${f.length ? 'content-length' : f.transport === 'h1' ? 'chunked' : 'no content-length'} ${f.pieces > 1 ? 'trickled' : 'whole'}`;

test('every stage that reads the body refuses what it must, over both transports, with and without content-length, whole and trickled', async (t) => {
  const g = await gate(t);
  const cases = [
    { reader: 'models scope', token: g.tokens.models.token, body: body({ model: 'pm-wide-x', max_tokens: 5 }), status: 403, code: 'model_not_allowed' },
    { reader: 'token budget_usd', token: g.tokens.tiny.token, body: body({}), status: 429, code: 'budget_exhausted' },
    { reader: 'org spend_limit_usd', token: g.tokens.orgCapped.token, body: body({}), status: 429, code: 'budget_exhausted' },
    { reader: 'plugin body field', token: g.tokens.plain.token, body: body({ tier: 'forbidden', max_tokens: 5 }), status: 403, code: 'tier_not_allowed' },
  ];
  for (const f of FRAMINGS) {
    for (const c of cases) {
      const before = g.up.started;
      const r = await send(g.app.url, { ...f, path: CHAT, headers: { 'x-proxy-token': c.token }, body: c.body, gapMs: f.pieces > 1 ? 15 : 0 });
      t.is(r.status, c.status, `${c.reader}, ${label(f)}: ${r.text}`);
      t.is(r.body?.error?.code, c.code, `${c.reader}, ${label(f)}`);
      t.is(g.up.started, before, `${c.reader}, ${label(f)}: nothing reached the provider`);
    }
  }
});

test('what every reader accepts reaches the provider byte for byte, over both transports and every framing', async (t) => {
  const g = await gate(t);
  const cases = [
    { reader: 'models scope', token: g.tokens.models.token, body: body({ max_tokens: 5 }) },
    { reader: 'token budget_usd', token: g.tokens.rich.token, body: body({ max_tokens: 5 }) },
    { reader: 'plugin body field', token: g.tokens.plain.token, body: body({ tier: 'gold', max_tokens: 5 }) },
  ];
  for (const f of FRAMINGS) {
    for (const c of cases) {
      const r = await send(g.app.url, { ...f, path: CHAT, headers: { 'x-proxy-token': c.token }, body: c.body, gapMs: f.pieces > 1 ? 15 : 0 });
      t.is(r.status, 200, `${c.reader}, ${label(f)}: ${r.text}`);
      t.is(g.up.received.at(-1), c.body, `${c.reader}, ${label(f)}: the body arrived whole and unchanged`);
    }
  }
});

test('a bodiless request is not waited on, and an empty body is no body the same way on every transport and framing', async (t) => {
  const g = await gate(t);
  g.up.usage = () => undefined;
  for (const transport of ['h1', 'h2c'] as Transport[]) {
    // GET v1/models (HTTP/2: END_STREAM on the headers): nothing to read, nothing to price, forwarded even under a tiny budget.
    const models = await send(g.app.url, { transport, method: 'GET', path: '/v1/proxy/v1/models', headers: { 'x-proxy-token': g.tokens.tiny.token } });
    t.is(models.status, 200, `${transport} GET: ${models.text}`);
    for (const length of [true, false]) {
      // Content-Length: 0, a chunked body of no chunks, DATA frames carrying nothing: no body, whatever the framing.
      const empty = await send(g.app.url, { transport, path: CHAT, headers: { 'x-proxy-token': g.tokens.tiny.token }, body: '', length });
      t.is(empty.status, 200, `${transport} empty POST (${length ? 'content-length' : 'no content-length'}): ${empty.text}`);
      t.is(g.up.received.at(-1), '');
      // A models scope has no model to check in it: refused alike.
      const scoped = await send(g.app.url, { transport, path: CHAT, headers: { 'x-proxy-token': g.tokens.models.token }, body: '', length });
      t.is(scoped.status, 403, `${transport} empty POST, models scope: ${scoped.text}`);
    }
  }
});

test('fail closed: a stage that comes to need the body after the body stage ran gets the request refused 503, never forwarded unread', async (t) => {
  const g = await gate(t);
  for (const f of FRAMINGS) {
    const before = g.up.started;
    const r = await send(g.app.url, { ...f, path: CHAT, headers: { 'x-proxy-token': g.tokens.plain.token, 'x-late-cap': '1' }, body: body({ max_tokens: 5 }), gapMs: f.pieces > 1 ? 15 : 0 });
    t.is(r.status, 503, `${label(f)}: ${r.text}`);
    t.is(r.body?.error?.code, 'unavailable');
    t.is(g.up.started, before, `${label(f)}: nothing reached the provider`);
  }
  // The same request without the late need goes through.
  t.is((await send(g.app.url, { transport: 'h2c', length: false, path: CHAT, headers: { 'x-proxy-token': g.tokens.plain.token }, body: body({ max_tokens: 5 }) })).status, 200);
});
