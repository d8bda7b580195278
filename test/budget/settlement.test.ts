/**
 * Settlement of a budgeted request through real streams: an SSE chat completion that reports its
 * usage at the end is settled to that usage; one that reports none (no include_usage), or is cut
 * off mid-stream, keeps its whole reservation; cached input is priced as cached; a Gemini-shaped
 * provider (model in the path, a `prefix*` price, usageMetadata) is settled the same way.
 */
import test from 'ava';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { providersDir } from '../support/providers-dir.js';
import { startUsageUpstream, worstCase } from '../support/budget.js';
import { SpendLedger } from '../../src/accounting/spend-ledger.js';
import { Symbols } from '../../src/symbols.js';
import type { Store } from '../../src/store/ports.js';
import type { TestApp } from '../support/app.js';
import { quiet } from '../support/wait.js';
import { leasedOut } from '../support/leases.js';

const spent = async (app: TestApp, key: string): Promise<number> =>
  (await leasedOut(app.server.container.resolve<Store>(Symbols.Store), key)) - app.server.container.resolve(SpendLedger).heldOf(key);

async function stream(app: TestApp, token: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const r = await fetch(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { 'x-proxy-token': token, 'content-type': 'application/json', ...headers }, body });
  let text = '';
  try {
    text = await r.text();
  } catch { /* cut off */ }
  return { status: r.status, text };
}

test('streamed: settled to the usage reported at the end; none reported or cut off keeps the reservation', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']), KEYWARD_UPSTREAM_PRICED: fake.url } });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'priced', 'sk-priced-0123456789');
  const tok = await mintToken(app, org, cred, '1h', { budget_usd: '10' });
  const key = `spend:tok:${tok.id}`;

  const withUsage = JSON.stringify({ model: 'pm-1', max_tokens: 50, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
  const r1 = await stream(app, tok.token, withUsage, { 'x-fake-events': '3' });
  t.is(r1.status, 200);
  t.true(r1.text.includes('[DONE]'));
  const reported = 11 * 2 + 3 * 8; // the fake reports 11 prompt and 3 completion tokens; pm-1: 2 and 8 µ$ per token
  t.is(await spent(app, key), reported);

  const noUsage = JSON.stringify({ model: 'pm-1', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.is((await stream(app, tok.token, noUsage)).status, 200);
  t.is(await spent(app, key), reported + worstCase(noUsage, 50), 'no usage reported: the whole worst case stands');

  const cut = await stream(app, tok.token, withUsage, { 'x-fake-events': '5', 'x-fake-reset': '2' });
  t.is(cut.status, 200);
  t.false(cut.text.includes('[DONE]'));
  await quiet(app); // settled when the response closes
  t.is(await spent(app, key), reported + worstCase(noUsage, 50) + worstCase(withUsage, 50), 'cut before the usage: the whole worst case stands');
});

test('cached input is priced at the cached price', async (t) => {
  const up = await startUsageUpstream();
  t.teardown(() => up.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']), KEYWARD_UPSTREAM_PRICED: up.url } });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'priced', 'sk-priced-0123456789');
  const tok = await mintToken(app, org, cred, '1h', { budget_usd: '10' });
  up.usage = () => ({ prompt_tokens: 1000, completion_tokens: 10, cached: 800 });
  const body = JSON.stringify({ model: 'pm-1', max_tokens: 50, messages: [{ role: 'user', content: 'x'.repeat(2000) }] });
  const r = await fetch(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { 'x-proxy-token': tok.token, 'content-type': 'application/json' }, body });
  await r.arrayBuffer();
  t.is(r.status, 200);
  // 200 plain input at 2 µ$, 800 cached at 0.5 µ$, 10 output at 8 µ$.
  t.is(await spent(app, `spend:tok:${tok.id}`), 200 * 2 + 800 * 0.5 + 10 * 8);
});

test('Gemini-shaped: the model from the path, a prefix price, streamed and not, settled to usageMetadata', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['pricedgem']), KEYWARD_UPSTREAM_PRICEDGEM: fake.url } });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'pricedgem', 'gem-key-0123456789');
  const tok = await mintToken(app, org, cred, '1h', { budget_usd: '1' });
  const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 64 } });
  const call = async (action: string, query = '') => {
    const r = await fetch(`${app.url}/v1/proxy/v1beta/models/gem-1.5-x:${action}${query}`, { method: 'POST', headers: { 'x-proxy-token': tok.token, 'content-type': 'application/json', 'x-fake-events': '4' }, body });
    await r.text();
    return r.status;
  };
  t.is(await call('generateContent'), 200);
  t.is(await call('streamGenerateContent', '?alt=sse'), 200);
  // The fake reports 17 prompt and 4 candidate tokens each time; gem-1*: 1 and 4 µ$ per token.
  t.is(await spent(app, `spend:tok:${tok.id}`), 2 * (17 * 1 + 4 * 4));
  // Another model of the provider has no price.
  const r = await fetch(`${app.url}/v1/proxy/v1beta/models/other-model:generateContent`, { method: 'POST', headers: { 'x-proxy-token': tok.token, 'content-type': 'application/json' }, body });
  t.is(r.status, 403);
  t.is(((await r.json()) as { error: { code: string } }).error.code, 'model_unpriced');
});
