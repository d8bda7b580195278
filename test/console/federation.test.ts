/**
 * The organisation's federation subject in a real browser, from a gateway that is an OIDC issuer
 * (KEYWARD_ISSUER_URL set, nothing faked), at 1280 and 375 px: the issuer and the subject GET
 * /v1/orgs/self gives, each with a copy button that copies exactly it, and what each cloud takes them
 * with (AWS's and Azure's audiences); readable at phone width, no sideways scroll, axe-clean.
 */
import test from 'ava';
import { api, createOrg, startApp } from '../support/app.js';
import { accessible } from '../support/axe.js';
import { launchBrowser, watchedPage } from '../support/browser.js';
import { cleanRun, nothingLeaked, openPage, sidewaysScroll, signIn, text } from '../support/console-page.js';

for (const width of [1280, 375]) {
  test.serial(`the federation issuer and subject to trust in a cloud at ${width} px`, async (t) => {
    t.timeout(180_000, 'a browser session on a shared machine');
    const app = await startApp(t, { env: { KEYWARD_ISSUER_URL: 'https://keyward.example.com' } });
    const org = await createOrg(app, `federation-${width}`);
    const self = (await api(app, 'GET', '/v1/orgs/self', { token: org.token })).body;
    t.deepEqual(self.federation, { issuer: 'https://keyward.example.com', subject: `org:${org.id}` });
    const browser = await launchBrowser(t);
    const w = await watchedPage(browser, app.url, { width, height: 900 });
    const { page } = w;
    await signIn(page, app.url, org.token);
    await openPage(page, 'Organisation');
    await page.locator('#federation').waitFor();
    await page.getByRole('button', { name: 'Copy subject' }).click();
    t.is(await page.evaluate<string>('navigator.clipboard.readText()'), `org:${org.id}`);
    await page.getByRole('button', { name: 'Copy issuer' }).click();
    t.is(await page.evaluate<string>('navigator.clipboard.readText()'), 'https://keyward.example.com');
    const shown = await text(page, '#federation');
    t.regex(shown, /sts\.amazonaws\.com/);
    t.regex(shown, /api:\/\/AzureADTokenExchange/);
    const subject = await page.locator('#federation dd', { hasText: `org:${org.id}` }).evaluate((el) => ({ right: el.getBoundingClientRect().right, scroll: el.scrollWidth, client: el.clientWidth }));
    t.true(subject.right <= width && subject.scroll <= subject.client, 'the subject is shown whole');
    await accessible(t, page, `federation ${width}`);
    t.true(await sidewaysScroll(page) <= 0);
    await nothingLeaked(t, w, org.token);
    await cleanRun(t, w);
  });
}
