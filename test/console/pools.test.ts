/**
 * The console's Pools page in a real browser, at 1280 and 375 px: no pools yet; a pool created from two
 * keys picked by name (none picked is asked for under the field); a token minted for it from the page,
 * with a tokens-per-minute and a concurrency limit; a request through it whose first key is rate-limited
 * shows that key cooling, with its recent 429, on the page; the strategy changed; the pool deleted after
 * confirmation (its token refused then). The page passes axe with no serious or critical violation and
 * does not scroll sideways.
 */
import test from 'ava';
import { api } from '../support/app.js';
import { accessible } from '../support/axe.js';
import { launchBrowser, Steps, watchedPage } from '../support/browser.js';
import { cleanRun, fieldError, nothingLeaked, openPage, sidewaysScroll, signIn } from '../support/console-page.js';
import { poolFixture } from '../support/pool-fixture.js';

for (const width of [1280, 375]) {
  test.serial(`pools at ${width} px: create, mint for it, member health, change, delete`, async (t) => {
    t.timeout(240_000, 'a browser session on a shared machine');
    const f = await poolFixture(t, [429, 'ok']);
    await api(f.app, 'PATCH', `/v1/credentials/${f.members[0]}`, { token: f.org.token, body: { name: 'first key' } });
    await api(f.app, 'PATCH', `/v1/credentials/${f.members[1]}`, { token: f.org.token, body: { name: 'second key' } });
    const browser = await launchBrowser(t);
    const w = await watchedPage(browser, f.app.url, { width, height: 900 });
    const { page } = w;
    const steps = new Steps(t, page);
    await signIn(page, f.app.url, f.org.token);

    let poolId = '';
    let token = '';
    await steps.run('create', async () => {
      await openPage(page, 'Pools');
      await page.locator('main section.card', { hasText: 'No pools yet.' }).waitFor();
      await page.locator('#pool-name').fill('openai keys');
      await page.getByRole('button', { name: 'Create pool' }).click();
      t.is(await page.locator('#pool-members-error').innerText(), 'Enter the keys.');
      await page.getByLabel(/first key/).check();
      await page.getByLabel(/second key/).check();
      await page.locator('#pool-strategy').selectOption('ordered');
      await page.getByRole('button', { name: 'Create pool' }).click();
      await page.locator('p.ok', { hasText: 'Created "openai keys".' }).waitFor();
      const pools = (await api(f.app, 'GET', '/v1/pools', { token: f.org.token })).body.data;
      t.is(pools.length, 1);
      t.like(pools[0], { name: 'openai keys', strategy: 'ordered', provider: 'openai' });
      poolId = pools[0].id;
      await page.locator(`tr[data-id="${poolId}"]`).waitFor();
      t.regex(await page.locator(`tr[data-id="${poolId}"]`).innerText(), /first key[\s\S]*healthy[\s\S]*second key[\s\S]*healthy/);
      await accessible(t, page, `pools ${width}`);
      t.true(await sidewaysScroll(page) <= 0);
    });

    await steps.run('mint for the pool', async () => {
      await page.getByRole('button', { name: 'Mint token for "openai keys"' }).click();
      await page.locator('#mint-tokens_per_minute').fill('100000');
      await page.locator('#mint-max_concurrent').fill('4');
      await page.getByRole('button', { name: 'Mint token', exact: true }).click();
      await page.locator('#minted-value').waitFor();
      token = await page.locator('#minted-value').innerText();
      t.regex(token, /^ptok_/);
      const minted = (await api(f.app, 'GET', '/v1/tokens', { token: f.org.token })).body.data.find((x: { pool_id?: string }) => x.pool_id === poolId);
      t.like(minted, { pool_id: poolId, tokens_per_minute: 100000, max_concurrent: 4 });
      await accessible(t, page, `pools minted ${width}`);
      t.true(await sidewaysScroll(page) <= 0);
      await page.getByRole('button', { name: 'Done' }).click();
    });

    await steps.run('member health', async () => {
      const r = await f.chat(token);
      t.is(r.status, 200);
      t.is(r.headers.get('x-keyward-attempts'), '2');
      await openPage(page, 'Tokens');
      await openPage(page, 'Pools');
      const row = page.locator(`tr[data-id="${poolId}"]`);
      await row.locator('li[data-health="cooling"]').waitFor();
      t.regex(await row.innerText(), /first key[\s\S]*cooling until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; last 5 min: 1 rate-limited[\s\S]*second key[\s\S]*healthy/);
      await accessible(t, page, `pools with a cooling key ${width}`);
    });

    await steps.run('change and delete', async () => {
      await page.getByRole('button', { name: 'Change "openai keys"' }).click();
      await page.locator(`#pool-edit-${poolId}-strategy`).selectOption('least_busy');
      await page.getByRole('button', { name: 'Save pool' }).click();
      await page.locator('p.ok', { hasText: 'Saved "openai keys".' }).waitFor();
      t.is((await api(f.app, 'GET', `/v1/pools/${poolId}`, { token: f.org.token })).body.strategy, 'least_busy');
      await page.getByRole('button', { name: 'Delete "openai keys"' }).click();
      await page.getByRole('button', { name: 'Delete for good' }).click();
      await page.locator(`tr[data-id="${poolId}"]`).waitFor({ state: 'detached' });
      t.is((await f.chat(token)).status, 401, 'its token went with it');
      t.true(await sidewaysScroll(page) <= 0);
    });
    await nothingLeaked(t, w, f.org.token);
    await cleanRun(t, w);
  });
}
