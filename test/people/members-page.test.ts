/**
 * The console's Members page past its first hundred: the newest hundred first with "Show 100 more", which reads the
 * next page of GET /v1/members (`starting_after`); a budget set after that reloads as many as were shown. The 130
 * members are written to the store as their first sign-ins would write them (test/people/console-sso.test.ts signs
 * real ones in through oidc-provider).
 */
import test from 'ava';
import { createOrg, startApp } from '../support/app.js';
import { accessible } from '../support/axe.js';
import { launchBrowser, Steps, watchedPage } from '../support/browser.js';
import { cleanRun, openPage, signIn } from '../support/console-page.js';
import { Symbols } from '../../src/symbols.js';
import type { Store } from '../../src/store/ports.js';

const COUNT = 130;

test('Members: the newest 100, then Show 100 more reads the rest; a budget set keeps them all shown', async (t) => {
  t.timeout(240_000, 'a browser session on a shared machine');
  const app = await startApp(t);
  const org = await createOrg(app);
  const store = app.server.container.resolve<Store>(Symbols.Store);
  const start = Date.UTC(2026, 10, 1);
  for (let i = 0; i < COUNT; i++) {
    const n = String(i).padStart(3, '0');
    await store.signInMember({
      id: `usr_membersPage${n}`, orgId: org.id, issuer: 'https://idp.example', subject: `subject-${n}`, email: `person${n}@example.com`,
      name: `Person ${n}`, role: 'member', budgetMicros: null, createdAt: start + i * 1000, lastSignInAt: start + i * 1000,
    });
  }
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, app.url, { width: 1280, height: 900 });
  const { page } = w;
  const steps = new Steps(t, page);
  const rows = page.locator('table.records tbody tr');
  await steps.run('first hundred', async () => {
    await signIn(page, app.url, org.token);
    await openPage(page, 'Members');
    await page.getByRole('button', { name: 'Show 100 more' }).waitFor();
    t.is(await rows.count(), 100);
    t.regex(await page.locator('.note').first().innerText(), /Showing the newest 100\./);
    t.is(await rows.first().getAttribute('data-id'), 'usr_membersPage129', 'newest first');
    await accessible(t, page, 'members, more to show');
  });
  await steps.run('the rest', async () => {
    await page.getByRole('button', { name: 'Show 100 more' }).click();
    await page.locator('tr[data-id="usr_membersPage000"]').waitFor();
    t.is(await rows.count(), COUNT);
    t.is(await page.getByRole('button', { name: 'Show 100 more' }).count(), 0, 'nothing more to show');
  });
  await steps.run('a budget set keeps them all', async () => {
    // The oldest member: on the second page only.
    await page.getByRole('button', { name: 'Set budget of person000@example.com' }).click();
    await page.locator('#member-budget_usd:focus').waitFor();
    await page.keyboard.type('12.50');
    await page.keyboard.press('Enter');
    await page.locator('p.ok[role="status"]', { hasText: 'person000@example.com may spend $12.50 a month.' }).waitFor();
    await page.locator('tr[data-id="usr_membersPage000"]', { hasText: '$12.50' }).waitFor();
    t.is(await rows.count(), COUNT, 'the reload read as many as were shown');
  });
  await cleanRun(t, w);
});
