/**
 * The Spend page in a real browser, at 1280 and 375 px: an organisation's priced traffic broken down by
 * token (named, a revoked one too), by credential (by its label) and by model, the dearest first, in a
 * table whose figures are the API's and a ranking whose bars follow them, on an axis of round ticks
 * written alike; another period with no traffic says so. And the credential form's yes-flags are
 * checkboxes: Azure's "Federated" ticked sends "true" (the provider's rule then asks for the Entra app
 * under its field). Each view passes axe with no serious or critical violation and does not scroll
 * sideways.
 */
import test from 'ava';
import { api, createOrg, startApp } from '../support/app.js';
import { accessible } from '../support/axe.js';
import { launchBrowser, Steps, watchedPage } from '../support/browser.js';
import { cleanRun, fieldError, nothingLeaked, openPage, sidewaysScroll, signIn, svgText, text } from '../support/console-page.js';
import { pricedFixture } from '../support/priced-providers.js';
import { quiet } from '../support/wait.js';

/** The table's rows as [first cell's first line, spend]. */
async function rows(page: import('playwright-core').Page): Promise<string[][]> {
  return page.locator('table.records tbody tr').evaluateAll((trs) => trs.map((tr) => {
    const cells = [...tr.querySelectorAll('td')].map((td) => (td as unknown as { innerText: string }).innerText.trim());
    return [cells[0]!.split('\n')[0]!, cells[3]!];
  }));
}

for (const width of [1280, 375]) {
  test.serial(`spend by token, credential and model at ${width} px`, async (t) => {
    t.timeout(240_000, 'a browser session on a shared machine');
    const f = await pricedFixture(t);
    const { app, org } = f;
    await api(app, 'PATCH', `/v1/credentials/${f.credentials.anthropic}`, { token: org.token, body: { name: 'claude key' } });
    const mint = async (credential: string, name: string) => (await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: credential, ttl: '1h', name } })).body;
    const a = await mint(f.credentials.openai, 'support bot');
    const b = await mint(f.credentials.anthropic, 'evals agent');
    await f.spend('v1/chat/completions', { model: 'spend-4o', messages: [] }, a.token); // 98 µ$
    for (let i = 0; i < 3; i++) await f.spend('v1/messages', { model: 'spend-claude-sonnet', max_tokens: 5, messages: [] }, b.token); // 3 × 144 µ$
    await quiet(app);
    await api(app, 'DELETE', `/v1/tokens/${b.id}`, { token: org.token });
    const browser = await launchBrowser(t);
    const w = await watchedPage(browser, app.url, { width, height: 900 });
    const { page } = w;
    const steps = new Steps(t, page);
    await signIn(page, app.url, org.token);

    await steps.run('by token', async () => {
      await openPage(page, 'Spend');
      await page.locator('table.records tbody tr').nth(1).waitFor();
      t.deepEqual(await rows(page), [['evals agent', '$0.000432'], ['support bot', '$0.000098']], 'named (the revoked one too), the dearest first');
      t.regex(await text(page, 'tr[data-key="' + b.id + '"]'), /3[\s\S]*39 \/ 21[\s\S]*\$0\.000432[\s\S]*81\.5%/);
      t.regex(await text(page, '[data-range]'), /^From \d{4}-\d\d-01 to \d{4}-\d\d-\d\d \(UTC\): \$0\.00053 in all\.$/);
      // The ranking: one bar per row, the longer for the dearer; x-axis ticks written alike.
      const bars = await page.locator('[data-chart="rank-token"] rect.bar').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('width'))));
      t.is(bars.length, 2);
      t.true(bars[0]! > bars[1]! * 4);
      const ticks = await page.locator('[data-chart="rank-token"] .x-tick text').evaluateAll((xs) => xs.map((x) => x.textContent ?? ''));
      t.deepEqual(ticks, ['$0.000', '$0.001'], 'from $0 on a round step, every tick with the same precision');
      t.regex(await svgText(page, '[data-chart="rank-token"] desc'), /the largest evals agent at \$0\.000432/);
      await accessible(t, page, `spend by token ${width}`);
      t.true(await sidewaysScroll(page) <= 0);
    });

    await steps.run('by credential and by model', async () => {
      await page.locator('#spend-by').selectOption('credential');
      await page.locator(`tr[data-key="${f.credentials.openai}"]`).waitFor();
      const [first, second] = await rows(page);
      t.regex(first![0]!, /^claude key \(Spend test \(anthropic\), key …\w{4}\)$/);
      t.is(first![1], '$0.000432');
      t.is(second![1], '$0.000098');
      await page.locator('#spend-by').selectOption('model');
      await page.locator('tr[data-key="spend-4o*"]').waitFor();
      t.deepEqual(await rows(page), [['spend-claude*', '$0.000432'], ['spend-4o*', '$0.000098']]);
      await accessible(t, page, `spend by model ${width}`);
      t.true(await sidewaysScroll(page) <= 0);
      await page.locator('#spend-period').selectOption('last-month');
      await page.locator('[data-empty="breakdown"]').waitFor();
      t.is(await page.locator('table.records').count(), 0);
    });
    await nothingLeaked(t, w, org.token);
    await cleanRun(t, w);
  });
}

test.serial('a yes-flag is a checkbox: Azure\'s "Federated" ticked is sent as true', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const app = await startApp(t);
  const org = await createOrg(app, 'flags');
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, app.url, { width: 375, height: 900 });
  const { page } = w;
  await signIn(page, app.url, org.token);
  await openPage(page, 'Credentials');
  await page.locator('#new-provider').selectOption('azure');
  const flag = page.getByRole('checkbox', { name: 'Federated (no stored key)' });
  await flag.waitFor();
  t.is(await page.locator('input[type="text"]#new-federated').count(), 0, 'not a text field');
  await page.locator('#new-resource').fill('my-res');
  await flag.check();
  await page.getByRole('button', { name: 'Store key' }).click();
  // Sent as "true": the provider's rule for a federated credential asks for the Entra tenant, under its field.
  t.regex(await fieldError(page, 'new-tenant_id'), /Tenant ID is required with Federated/);
  await accessible(t, page, 'a flag field 375');
  t.true(await sidewaysScroll(page) <= 0);
  await cleanRun(t, w);
});
