/**
 * The first-run path in a real browser (headless Chromium), at 1280 and 375 px: a new organisation's
 * owner signs in and lands on "Get started"; a refused key is explained under its field in plain words
 * (marked invalid, described by the message); a named key is stored; the mint form has it picked by
 * name and provider; the minted token is shown once, whole and wrapping, with the provider's SDK
 * variables, which the copy button copies; the openai SDK set up from exactly those variables streams
 * through the proxy. Each step passes an axe accessibility check; nothing scrolls sideways, nothing
 * reaches another host, no CSP violation. Signing in again once a key and a token exist opens Tokens.
 */
import test from 'ava';
import OpenAI from 'openai';
import { api, createOrg, startApp } from '../support/app.js';
import { accessible } from '../support/axe.js';
import { launchBrowser, Steps, watchedPage } from '../support/browser.js';
import { cleanRun, fieldError, nothingLeaked, sidewaysScroll, signIn, text } from '../support/console-page.js';
import { startFakeProvider, WORDS } from '../support/fake-provider.js';
import { canaryKey } from '../support/proxy-fixture.js';

for (const width of [1280, 375]) {
  test.serial(`first run at ${width} px: Get started → store a named key → mint → the SDK variables work as shown`, async (t) => {
    t.timeout(180_000, 'a browser session on a shared machine');
    const fake = await startFakeProvider();
    t.teardown(() => fake.close());
    const app = await startApp(t, { env: { KEYWARD_UPSTREAM_OPENAI: fake.url } });
    const org = await createOrg(app, `first-run-${width}`);
    const browser = await launchBrowser(t);
    const w = await watchedPage(browser, app.url, { width, height: 900 });
    const { page } = w;
    const steps = new Steps(t, page);
    const key = canaryKey('openai');

    await steps.run('lands on the guide', async () => {
      t.is(await signIn(page, app.url, org.token), 'Get started');
      t.is(await page.locator('nav a[aria-current="page"]').innerText(), 'Get started');
      t.is(await page.locator('[data-step="1"] h2').innerText(), '1. Store a provider key');
      t.is(await page.locator('[data-step="2"] .note').innerText(), 'Store a key first.');
      t.true(await page.getByRole('heading', { name: '3. Point your agent at the gateway' }).isVisible());
      await accessible(t, page, `guide ${width}`);
      t.true(await sidewaysScroll(page) <= 0);
    });

    await steps.run('store a key, refused first', async () => {
      // Labels from the provider file, never the API's field names.
      await page.getByLabel('API key', { exact: true }).waitFor();
      t.is(await page.locator('label[for="new-api_key"]').innerText(), 'API key');
      t.is(await page.locator('#new-api_key-help').innerText(), 'A secret key from platform.openai.com, API keys. It starts with sk-.');
      t.false((await text(page, 'form[aria-label="Store a provider key"]')).includes('api_key'));
      // Nothing typed: asked for in plain words, under the field, before anything is sent.
      await page.getByRole('button', { name: 'Store key' }).click();
      t.is(await fieldError(page, 'new-api_key'), 'Enter the API key.');
      await page.locator('#new-api_key:focus').waitFor();
      // A key the provider's rules refuse: the API's refusal reworded, no backticks, no API names.
      await page.locator('#new-api_key').fill('short');
      await page.getByRole('button', { name: 'Store key' }).click();
      await page.locator('#new-api_key-error', { hasText: 'API key must be' }).waitFor();
      const refused = await fieldError(page, 'new-api_key');
      t.is(refused, 'API key must be 8 to 4096 characters without spaces.');
      t.notRegex(refused, /[`_]|\^|\$/);
      await accessible(t, page, `guide with an error ${width}`);
      // A name that is not one: under the name field.
      await page.locator('#new-name').fill('a\u202eb');
      await page.locator('#new-api_key').fill(key);
      await page.getByRole('button', { name: 'Store key' }).click();
      t.is(await fieldError(page, 'new-name'), 'Name must be 1 to 64 characters, not starting or ending with a space.');
      t.is(await page.locator('#new-api_key').getAttribute('aria-invalid'), null, 'the other field is no longer marked');
      await page.locator('#new-name').fill('Prod OpenAI');
      await page.getByRole('button', { name: 'Store key' }).click();
      await page.locator('[data-step="1"] .done-mark').waitFor();
      t.regex(await text(page, '[data-step="1"]'), /Stored: Prod OpenAI \(OpenAI, key …\w{4}\)/);
      t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data[0].name, 'Prod OpenAI');
    });

    let value = '';
    await steps.run('mint', async () => {
      const picked = page.locator('#mint-credential_id option:checked');
      t.regex(await picked.innerText(), /^Prod OpenAI \(OpenAI, key …\w{4}\)$/, 'picked by name and provider');
      t.notRegex(await page.locator('#mint-credential_id').innerText(), /cred_/);
      await page.locator('#mint-ttl').fill('15 minutes');
      await page.getByRole('button', { name: 'Mint token' }).click();
      t.is(await fieldError(page, 'mint-ttl'), 'Enter a lifetime as a number and a unit: s, m, h or d (for example 15m or 7d).');
      await page.locator('#mint-ttl').fill('15m');
      await page.locator('#mint-name').fill('evals agent');
      await page.getByRole('button', { name: 'Mint token' }).click();
      await page.locator('#minted-value').waitFor();
      value = await page.locator('#minted-value').innerText();
      t.regex(value, /^ptok_[0-9A-Za-z]{38}$/);
      t.regex(await text(page, '.minted [role="status"]'), /"evals agent" is ready\. Copy it now: it is not shown again\./);
      // The whole value is readable: it wraps inside its box, nothing clipped.
      const box = await page.locator('#minted-value').evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth, right: el.getBoundingClientRect().right }));
      t.true(box.scroll <= box.client, `the token value is clipped (${box.scroll} > ${box.client})`);
      t.true(box.right <= width, 'the token value is inside the viewport');
      await page.getByRole('button', { name: 'Copy token' }).click();
      await page.locator('.minted .copy [role="status"]', { hasText: 'Copied.' }).first().waitFor();
      t.is(await page.evaluate<string>('navigator.clipboard.readText()'), value);
      await accessible(t, page, `minted ${width}`);
      t.true(await sidewaysScroll(page) <= 0);
    });

    await steps.run('the SDK variables', async () => {
      const snippet = page.locator('.sdk pre[data-kind="env"]').first();
      const shown = await snippet.innerText();
      t.is(shown, `OPENAI_BASE_URL=${app.url}/v1/proxy/v1\nOPENAI_API_KEY=${value}`);
      const box = await snippet.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
      t.true(box.scroll <= box.client, 'the variables wrap, nothing clipped');
      await page.getByRole('button', { name: 'Copy variables' }).first().click();
      t.is(await page.evaluate<string>('navigator.clipboard.readText()'), shown);
      // Exactly what was shown and copied points the official SDK at the gateway.
      const env = Object.fromEntries(shown.split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      const client = new OpenAI({ baseURL: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY, maxRetries: 0 });
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true });
      let streamed = '';
      for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
      t.is(streamed, WORDS.slice(0, 3).join(''));
      t.is(fake.received.at(-1)!.headers.authorization, `Bearer ${key}`);
      await page.locator('[data-step="3"] .done-mark').waitFor();
      await page.getByRole('button', { name: 'Done' }).click();
      t.is(await page.locator('#minted-value').count(), 0, 'the value is gone once dismissed');
    });

    await steps.run('next time: Tokens', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click();
      t.is(await signIn(page, app.url, org.token), 'Tokens');
      await page.locator('tr', { hasText: 'evals agent' }).waitFor();
      t.true((await text(page, 'tr:has-text("evals agent")')).includes('Prod OpenAI'));
      await accessible(t, page, `tokens ${width}`);
    });
    await nothingLeaked(t, w, org.token);
    await cleanRun(t, w);
    for (const secret of [key, value, org.token]) t.false(app.logText().includes(secret));
  });
}
