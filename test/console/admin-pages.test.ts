/**
 * The console's admin pages in a real browser, at 1280 and 375 px: admin keys (a minter named and
 * limited to a credential picked by name, an over-long lifetime refused under its field, the key shown
 * once and working, renamed, revoked and then refused), trust policies (a missing subject asked for,
 * one created and listed with its credential's name, deleted after confirmation), and the organisation
 * (no federation section unless GET /v1/orgs/self has one; the organisation token rotated with a grace
 * period, the new one shown once, the console carrying on with it while the old one still works).
 * Each page passes axe with no serious or critical violation and does not scroll sideways.
 */
import test from 'ava';
import { api, createOrg, startApp } from '../support/app.js';
import { accessible } from '../support/axe.js';
import { launchBrowser, Steps, watchedPage } from '../support/browser.js';
import { cleanRun, fieldError, nothingLeaked, openPage, sidewaysScroll, signIn, text } from '../support/console-page.js';
import { canaryKey } from '../support/proxy-fixture.js';

/** The value shown once is whole: not clipped, inside the viewport. */
async function wholeValue(page: import('playwright-core').Page, selector: string, width: number): Promise<boolean> {
  const box = await page.locator(selector).evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth, right: el.getBoundingClientRect().right }));
  return box.scroll <= box.client && box.right <= width;
}

for (const width of [1280, 375]) {
  test.serial(`admin keys, trust policies and the organisation at ${width} px`, async (t) => {
    t.timeout(240_000, 'a browser session on a shared machine');
    const app = await startApp(t);
    const org = await createOrg(app, `admin-pages-${width}`);
    const cred = (await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: canaryKey('openai'), name: 'prod openai' } })).body;
    await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred.id, ttl: '1h' } });
    const browser = await launchBrowser(t);
    const w = await watchedPage(browser, app.url, { width, height: 900 });
    const { page } = w;
    const steps = new Steps(t, page);
    const credentialText = `prod openai (OpenAI, key ${cred.key_hint})`;
    t.is(await signIn(page, app.url, org.token), 'Tokens', 'an organisation with a key and a token opens on Tokens');

    let minterToken = '';
    await steps.run('admin keys', async () => {
      await openPage(page, 'Admin keys');
      await page.locator('main section.card', { hasText: 'No admin keys yet.' }).waitFor();
      await page.locator('#akey-name').fill('ci deploy');
      await page.getByLabel(/^Minter/).check();
      await page.getByLabel(credentialText).check();
      await page.locator('#akey-ttl').fill('400d');
      await page.getByRole('button', { name: 'Create key' }).click();
      t.is(await fieldError(page, 'akey-ttl'), 'The lifetime may be at most 366 days.');
      await page.locator('#akey-ttl').fill('90d');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('#akey-value').waitFor();
      minterToken = await page.locator('#akey-value').innerText();
      t.regex(minterToken, /^otok_[0-9A-Za-z]{38}$/);
      t.true(await wholeValue(page, '#akey-value', width), 'the key is shown whole');
      const self = await api(app, 'GET', '/v1/orgs/self', { token: minterToken });
      t.like(self.body.caller, { role: 'minter', credential_ids: [cred.id] });
      const row = page.locator('tr', { hasText: 'ci deploy' });
      await row.waitFor();
      t.regex(await row.innerText(), new RegExp(`minter[\\s\\S]*${credentialText.replace(/[().…]/g, '.')}[\\s\\S]*active`));
      await accessible(t, page, `admin keys ${width}`);
      t.true(await sidewaysScroll(page) <= 0);
      await page.getByRole('button', { name: 'Done' }).click();

      await page.getByRole('button', { name: 'Rename "ci deploy"' }).click();
      await page.locator('#rename-name:focus').fill('ci deploy eu');
      await page.getByRole('button', { name: 'Save name' }).click();
      await page.locator('tr', { hasText: 'ci deploy eu' }).waitFor();
      await page.getByRole('button', { name: 'Revoke "ci deploy eu"' }).click();
      const question = await page.locator('.confirm.asking').boundingBox();
      const card = await page.locator('section.card', { has: page.locator('.confirm.asking') }).boundingBox();
      t.true(question!.x + question!.width <= card!.x + card!.width, 'the question is inside its card');
      await page.getByRole('button', { name: 'Revoke now' }).click();
      await page.locator('p.ok', { hasText: 'Revoked "ci deploy eu".' }).waitFor();
      t.is((await api(app, 'GET', '/v1/orgs/self', { token: minterToken })).status, 401);
    });

    await steps.run('trust policies', async () => {
      await openPage(page, 'Trust policies');
      await page.getByRole('button', { name: 'Create policy' }).click();
      t.is(await fieldError(page, 'tp-subject'), 'Enter the subject.');
      t.is(await page.locator('#tp-issuer').inputValue(), 'https://token.actions.githubusercontent.com');
      t.is(await page.locator('#tp-credential_id option:checked').innerText(), credentialText);
      await page.locator('#tp-subject').fill('repo:acme/app:ref:refs/heads/main');
      await page.locator('#tp-claims').fill('repository_owner_id=1234567\nrepository=acme/app');
      await page.locator('#tp-models').fill('gpt-4o-mini');
      await page.getByRole('button', { name: 'Create policy' }).click();
      await page.locator('p.ok', { hasText: 'Policy created.' }).waitFor();
      const policies = (await api(app, 'GET', '/v1/trust-policies', { token: org.token })).body.data;
      t.is(policies.length, 1);
      t.like(policies[0], { subject: 'repo:acme/app:ref:refs/heads/main', claims: { repository_owner_id: '1234567', repository: 'acme/app' }, credential_id: cred.id, ttl: '30m', models: ['gpt-4o-mini'], audience: app.url });
      const row = page.locator(`tr[data-id="${policies[0].id}"]`);
      await row.waitFor();
      t.true((await row.innerText()).includes(credentialText));
      await accessible(t, page, `trust policies ${width}`);
      t.true(await sidewaysScroll(page) <= 0);
      await page.getByRole('button', { name: 'Delete policy for repo:acme/app:ref:refs/heads/main' }).click();
      await page.getByRole('button', { name: 'Delete for good' }).click();
      await row.waitFor({ state: 'detached' });
      t.deepEqual((await api(app, 'GET', '/v1/trust-policies', { token: org.token })).body.data, []);
    });

    let newToken = '';
    await steps.run('organisation', async () => {
      await openPage(page, 'Organisation');
      await page.locator('dl.facts', { hasText: org.id }).waitFor();
      t.is(await page.locator('#federation').count(), 0, 'no federation section while the gateway has no issuer');
      await page.getByLabel('The current token keeps working for').selectOption('3600');
      await page.getByRole('button', { name: 'Rotate the token of the organisation' }).click();
      await page.getByRole('button', { name: 'Rotate now' }).click();
      await page.locator('#org-token-value').waitFor();
      newToken = await page.locator('#org-token-value').innerText();
      t.regex(newToken, /^otok_[0-9A-Za-z]{38}$/);
      t.not(newToken, org.token);
      t.true(await wholeValue(page, '#org-token-value', width), 'the new token is shown whole');
      t.regex(await text(page, '.minted'), /The old token works until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\./);
      await accessible(t, page, `organisation after rotation ${width}`);
      t.true(await sidewaysScroll(page) <= 0);
      // Both tokens work during the grace period; the console carries on with the new one.
      t.is((await api(app, 'GET', '/v1/orgs/self', { token: org.token })).status, 200);
      t.is((await api(app, 'GET', '/v1/orgs/self', { token: newToken })).status, 200);
      const sent: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('/v1/')) sent.push(r.headers().authorization ?? '');
      });
      await openPage(page, 'Tokens');
      await page.locator('tbody tr').first().waitFor();
      t.true(sent.length > 0 && sent.every((a) => a === `Bearer ${newToken}`), 'the console uses the new token');

      // A gateway that is an OIDC issuer says what to trust: shown with copy buttons.
      await page.route('**/v1/orgs/self', async (route) => {
        const res = await route.fetch();
        await route.fulfill({ response: res, json: { ...(await res.json()), federation: { issuer: 'https://keyward.example.com', subject: `org:${org.id}` } } });
      });
      await openPage(page, 'Organisation');
      await page.locator('#federation').waitFor();
      t.regex(await text(page, '#federation'), new RegExp(`https://keyward\\.example\\.com[\\s\\S]*org:${org.id}`));
      await page.getByRole('button', { name: 'Copy subject' }).click();
      t.is(await page.evaluate<string>('navigator.clipboard.readText()'), `org:${org.id}`);
      await accessible(t, page, `organisation with federation ${width}`);
      await page.unroute('**/v1/orgs/self');
    });
    await nothingLeaked(t, w, org.token);
    await nothingLeaked(t, w, newToken);
    await cleanRun(t, w);
    for (const secret of [minterToken, newToken, org.token]) t.false(app.logText().includes(secret));
  });
}
