/**
 * What a first-time operator reads in the console, in a real browser: the sign-in field says where an
 * organisation token or admin key comes from; the usage page shows what is held beside the figures and says in
 * one line what held is (the words of the API's document and `keyward usage`); the audit filter offers every
 * action the gateway records (its one list, `mcp.tool_call` included) and the trail names its actors (an admin
 * key by its name, the organisation token as such); the spend page shows MCP tool calls as tool calls. Each view
 * passes axe, nothing leaks, nothing foreign.
 */
import test from 'ava';
import { HELD_MEANS as API_HELD_MEANS } from '../../src/api/schemas/usage.js';
import { AUDIT_ACTIONS } from '../../src/controls/audit-actions.js';
import { HELD_MEANS as CONSOLE_HELD_MEANS, WHERE_KEYS_COME_FROM } from '../../console/src/explanations.js';
import { api, createCredential, createOrg, startApp } from '../support/app.js';
import { accessible } from '../support/axe.js';
import { launchBrowser, Steps, watchedPage } from '../support/browser.js';
import { cleanRun, nothingLeaked, openPage, signIn, text } from '../support/console-page.js';
import { canaryKey } from '../support/proxy-fixture.js';

test('sign-in says where keys come from; held is explained; the audit filter lists every action and names actors; tool calls read as such', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const app = await startApp(t);
  const org = await createOrg(app, 'first-hour-co');
  const key = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { name: 'ci bot', role: 'admin' } });
  t.is(key.status, 201);
  await createCredential(app, { id: org.id, token: key.body.token }, 'openai', canaryKey('openai'));
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, app.url, { width: 1280, height: 900 });
  const { page } = w;
  const steps = new Steps(t, page);

  await steps.run('sign-in page', async () => {
    await page.goto(`${app.url}/console`);
    await page.locator('#key:focus').waitFor();
    t.is(await text(page, '#key-help'), WHERE_KEYS_COME_FROM);
    t.regex(WHERE_KEYS_COME_FROM, /otok_…/);
    t.regex(WHERE_KEYS_COME_FROM, /npx keyward org create <name>/);
    t.regex(WHERE_KEYS_COME_FROM, /POST \/v1\/orgs/);
    t.regex(WHERE_KEYS_COME_FROM, /Admin keys page/);
    t.is(await page.locator('#key').getAttribute('aria-describedby'), 'key-help', 'the help is the field\'s description');
    await accessible(t, page, 'sign-in');
  });

  // The month's figures with something held (answered here, so the words are checked whatever is held right now).
  const period = new Date().toISOString().slice(0, 7);
  await page.route('**/v1/usage', (route) => route.fulfill({ json: {
    object: 'usage', period, proxy_requests: { used: 6, held: 620, limit: 10000 }, credentials: { used: 1, limit: 10 },
    tokens: { input: 5, output: 6 }, spend_usd: { used: '0.10', held: '0.50', limit: '25.00' },
  } }));
  await steps.run('usage: held', async () => {
    await signIn(page, app.url, org.token);
    await openPage(page, 'Usage');
    await page.locator('#held-means').waitFor();
    t.is(await text(page, '[data-figure="requests"]'), '6 of 10,000 (620 held)');
    t.is(await text(page, '[data-figure="spend"]'), '$0.10 of $25.00 ($0.50 held)');
    t.is(CONSOLE_HELD_MEANS, API_HELD_MEANS, 'the console says it as the API\'s document does');
    t.is(await text(page, '#held-means'), API_HELD_MEANS);
    await accessible(t, page, 'usage with held');
  });

  await steps.run('audit: every action, actors by name', async () => {
    await openPage(page, 'Audit');
    await page.locator('tr[data-action="credential.create"]').waitFor();
    const offered = await page.locator('#audit-action option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value).filter(Boolean));
    t.deepEqual(offered, [...AUDIT_ACTIONS].sort(), 'every action the gateway records, once');
    t.true(offered.includes('mcp.tool_call'));
    const made = page.locator('tr[data-action="credential.create"]').first();
    t.is(await made.locator('td').nth(4).innerText(), `ci bot\n${key.body.id}`, 'the admin key by its name, its id beneath');
    const byOrg = page.locator('tr[data-action="admin_key.create"]').first();
    t.regex(await byOrg.locator('td').nth(4).innerText(), /^organisation token\notk_[0-9A-Za-z]{24}$/);
    await page.getByLabel('Action', { exact: true }).selectOption('mcp.tool_call');
    await page.locator('p.note[role="status"]', { hasText: 'match mcp.tool_call' }).waitFor();
    await accessible(t, page, 'audit');
  });

  await page.route('**/v1/usage/breakdown**', (route) => route.fulfill({ json: {
    object: 'list', by: 'model', from: `${period}-01`, to: `${period}-28`, data: [
      { key: 'tool:github-mcp:get_issue', requests: 3, input_tokens: 0, output_tokens: 0, spend_usd: '0.00' },
      { key: 'unpriced', requests: 1, input_tokens: 4, output_tokens: 2, spend_usd: '0.00' },
    ],
  } }));
  await steps.run('spend: tool calls', async () => {
    await openPage(page, 'Spend');
    await page.locator('#spend-by').selectOption('model');
    const first = page.locator('table.records tbody tr', { hasText: 'get_issue' });
    await first.waitFor();
    t.is(await first.locator('td').first().innerText(), 'get_issue\ntool calls, github-mcp');
    t.is(await page.locator('table.records tbody tr').nth(1).locator('td').first().innerText(), 'unpriced models');
    await accessible(t, page, 'spend by model with tool calls');
  });

  await nothingLeaked(t, w, org.token);
  await cleanRun(t, w);
});
