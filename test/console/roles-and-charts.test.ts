/**
 * The console's usage charts and its roles, in a real browser. GET /v1/usage/daily, GET /v1/usage's
 * spend and GET /v1/orgs/self's caller.role (the spend and admin-keys work) are answered by the test
 * through playwright's routing, so the drawing and the role-aware buttons are checked whatever the
 * gateway serves: bars per day, the free-tier and spend limits as lines with the spend under its
 * limit below it, the monthly limit sent as typed; a viewer sees no button that changes anything, a
 * minter only the tokens page and its own credentials. Where the gateway has admin keys, a real
 * viewer key signs in as a viewer.
 */
import test from 'ava';
import { api, createOrg, startApp } from '../support/app.js';
import { launchBrowser, Steps, watchedPage } from '../support/browser.js';
import { accessible } from '../support/axe.js';
import { cleanRun, openPage, signIn, svgText, text } from '../support/console-page.js';
import { canaryKey } from '../support/proxy-fixture.js';

/** `days` daily rows ending today (UTC), as GET /v1/usage/daily answers them. */
function dailyRows(days: number): Array<{ date: string; requests: number; input_tokens: number; output_tokens: number; spend_usd: string }> {
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  return Array.from({ length: days }, (_, i) => {
    const date = new Date(today - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10);
    return { date, requests: i % 3 === 0 ? 0 : 10 * i, input_tokens: 100 * i, output_tokens: 40 * i, spend_usd: (0.25 * i).toFixed(6) };
  });
}

test('usage charts draw the free-tier and spend limits; each role sees only what it may do', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const app = await startApp(t);
  const org = await createOrg(app, 'roles-co');
  const credentialId = (await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: canaryKey('openai') } })).body.id as string;
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, app.url);
  const { page } = w;
  const steps = new Steps(t, page);
  const rows = dailyRows(30);
  const period = new Date().toISOString().slice(0, 7);
  // The shapes of GET /v1/usage/daily and GET /v1/usage's spend_usd (the spend work), answered here
  // by the test so the drawing is checked whatever this gateway serves.
  await page.route('**/v1/usage/daily**', (route) => route.fulfill({ json: { object: 'list', data: rows } }));
  await page.route('**/v1/usage', (route) => route.fulfill({ json: {
    object: 'usage', period, proxy_requests: { used: 1234, limit: 10000 }, credentials: { used: 1, limit: 10 },
    tokens: { input: 5, output: 6 }, spend_usd: { used: '12.50', limit: '20.00' },
  } }));

  await steps.run('charts', async () => {
    await signIn(page, app.url, org.token);
    await openPage(page, 'Usage');
    await page.locator('[data-chart="requests"]').waitFor();
    t.is(await text(page, '[data-figure="spend"]'), '$12.50 of $20.00');
    // Counts are written one way: the figure and the chart's limit alike.
    t.is(await text(page, '[data-figure="requests"]'), '1,234 of 10,000');
    // Round ticks in the figure's unit, every label of an axis with the same precision.
    const ticks = async (chart: string) => page.locator(`[data-chart="${chart}"] .y-tick text`).allTextContents();
    t.deepEqual(await ticks('requests'), ['0', '100', '200', '300']);
    t.deepEqual(await ticks('spend'), ['$0', '$2', '$4', '$6', '$8']);
    t.deepEqual(await ticks('requests-month'), ['0', '5,000', '10,000']);
    t.is(await page.locator('[data-chart="requests"] rect.bar').count(), rows.filter((r) => r.requests > 0).length);
    t.is(await page.locator('[data-chart="tokens"] rect.bar').count(), 2 * rows.filter((r) => r.input_tokens > 0).length, 'input and output stacked');
    t.is(await svgText(page, '[data-chart="requests-month"] .limit text'), 'Free tier: 10,000');
    t.is(await svgText(page, '[data-chart="spend-month"] .limit text'), 'Spend limit: $20.00');
    const thisMonth = rows.filter((r) => r.date.startsWith(period));
    const points = (await page.locator('[data-chart="spend-month"] polyline').getAttribute('points'))!.split(' ');
    t.is(points.length, thisMonth.length, 'one point per day of this month');
    // The limit is above the line while spend is under it (SVG y grows downwards).
    const limitY = Number(await page.locator('[data-chart="spend-month"] .limit line').getAttribute('y1'));
    const spent = thisMonth.reduce((s, r) => s + Number(r.spend_usd), 0);
    const lastY = Number(points.at(-1)!.split(',')[1]);
    t.is(spent < 20, lastY > limitY);
    t.regex((await page.locator('[data-chart="requests"] desc').textContent())!, /^Requests per day: 30 days from /);
    await accessible(t, page, 'usage with charts');
    // An owner may change the monthly limit: the page sends PATCH /v1/orgs/self with the amount as typed.
    const patched: unknown[] = [];
    await page.route('**/v1/orgs/self', (route) => {
      if (route.request().method() !== 'PATCH') return route.fallback();
      patched.push(route.request().postDataJSON());
      return route.fulfill({ json: { id: org.id, object: 'organization', name: 'roles-co', spend_limit_usd: '30.00' } });
    });
    await page.getByLabel('Monthly spend limit in USD').fill('30.00');
    await page.getByRole('button', { name: 'Set limit' }).click();
    await page.locator('form[aria-label="Monthly spend limit"] .ok', { hasText: 'Monthly limit set to $30.00.' }).waitFor();
    await page.getByRole('button', { name: 'Remove limit' }).click();
    await page.locator('form[aria-label="Monthly spend limit"] .ok', { hasText: 'No monthly limit.' }).waitFor();
    t.deepEqual(patched, [{ spend_limit_usd: '30.00' }, { spend_limit_usd: null }]);
    await page.unroute('**/v1/orgs/self');
  });

  // Roles (GET /v1/orgs/self's caller.role, the admin-keys work), answered by the test for each role.
  let role: Record<string, unknown> = { role: 'viewer' };
  await page.route('**/v1/orgs/self', (route) => route.fulfill({ json: { id: org.id, object: 'organization', name: 'roles-co', created_at: new Date().toISOString(), caller: { id: 'akey_x', ...role } } }));
  await steps.run('viewer', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    t.is(await signIn(page, app.url, org.token), 'Tokens', 'no guide for a viewer');
    t.is(await page.locator('.who').getAttribute('data-role'), 'viewer');
    t.deepEqual(await page.locator('nav a').allInnerTexts(), ['Tokens', 'Credentials', 'Pools', 'Teams', 'Members', 'Usage', 'Spend', 'Audit', 'Trust policies', 'Organisation']);
    await mintToken(org.token);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator('tbody tr').first().waitFor();
    t.is(await page.getByRole('button', { name: /^(Mint token|Revoke|Rename)/ }).count(), 0);
    await openPage(page, 'Credentials');
    await page.locator(`tr[data-id="${credentialId}"]`).waitFor();
    t.is(await page.getByRole('button', { name: /^(Store key|Rotate|Delete|Rename)/ }).count(), 0);
    await openPage(page, 'Usage');
    await page.locator('[data-figure="spend"]').waitFor();
    t.is(await page.getByRole('button', { name: 'Set limit' }).count(), 0);
    await openPage(page, 'Trust policies');
    t.is(await page.getByRole('button', { name: /^(Create policy|Delete)/ }).count(), 0);
    await openPage(page, 'Organisation');
    t.is(await page.getByRole('button', { name: /^Rotate/ }).count(), 0, 'only the organisation token rotates itself');
  });
  role = { role: 'minter', credential_ids: [credentialId] };
  await steps.run('minter', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, app.url, org.token);
    t.deepEqual(await page.locator('nav a').allInnerTexts(), ['Tokens', 'Organisation']);
    // A minter may not read credentials (the contract): its own list of ids is what it can pick from (once the page
    // has filled the list: the option is waited for, not raced).
    await page.locator('#mint-credential_id option').first().waitFor({ state: 'attached' });
    t.deepEqual(await page.locator('#mint-credential_id option').allInnerTexts(), [credentialId]);
    t.is(await page.getByRole('button', { name: /^Revoke/ }).count(), 0);
  });
  await page.unroute('**/v1/orgs/self');

  // A real viewer admin key signs in as a viewer.
  const keys = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { name: 'console viewer', role: 'viewer' } });
  await steps.run('viewer-key', async () => {
    t.is(keys.status, 201, keys.text);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, app.url, keys.body.token);
    t.is(await page.locator('.who').getAttribute('data-role'), 'viewer');
    t.is(await page.getByRole('button', { name: 'Mint token' }).count(), 0);
  });
  await cleanRun(t, w);

  async function mintToken(token: string): Promise<void> {
    const r = await api(app, 'POST', '/v1/tokens', { token, body: { credential_id: credentialId, ttl: '1h' } });
    t.is(r.status, 201);
  }
});

test('at 375 px the charts keep readable axis text and small amounts get round ticks in dollars', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const app = await startApp(t);
  const org = await createOrg(app, 'charts-co');
  await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: canaryKey('openai') } });
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, app.url, { width: 375, height: 800 });
  const { page } = w;
  // Small spends (a few thousandths of a dollar a day) and a few requests.
  const rows = dailyRows(30).map((r, i) => ({ ...r, requests: i % 4, spend_usd: (0.0004 * i).toFixed(6) }));
  const period = new Date().toISOString().slice(0, 7);
  await page.route('**/v1/usage/daily**', (route) => route.fulfill({ json: { object: 'list', data: rows } }));
  await page.route('**/v1/usage', (route) => route.fulfill({ json: {
    object: 'usage', period, proxy_requests: { used: 3, limit: 10000 }, credentials: { used: 1, limit: 10 }, tokens: { input: 5, output: 6 }, spend_usd: { used: '0.004000', limit: null },
  } }));
  await signIn(page, app.url, org.token);
  await openPage(page, 'Usage');
  await page.locator('[data-chart="spend"]').waitFor();
  t.is(await text(page, '[data-figure="requests"]'), '3 of 10,000');
  const ticks = (chart: string) => page.locator(`[data-chart="${chart}"] .y-tick text`).allTextContents();
  t.deepEqual(await ticks('spend'), ['$0.000', '$0.005', '$0.010', '$0.015']);
  t.deepEqual(await ticks('requests'), ['0', '1', '2', '3']);
  // Axis text is drawn at the stylesheet's size in CSS pixels, not scaled down with the picture.
  for (const chart of ['requests', 'spend', 'requests-month']) {
    const heights = await page.locator(`[data-chart="${chart}"] text.tick`).evaluateAll((els) => els.map((e) => e.getBoundingClientRect().height));
    t.true(heights.length > 2 && heights.every((h) => h >= 11), `${chart}: ${heights.join(', ')}`);
    const box = await page.locator(`[data-chart="${chart}"] svg`).boundingBox();
    t.true(box!.x >= 0 && box!.x + box!.width <= 375, `${chart} fits the width`);
  }
  t.true(await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth') <= 0);
  await accessible(t, page, 'usage at 375 px');
  await cleanRun(t, w);
});
