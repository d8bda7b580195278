/**
 * The operators' console in a real browser (headless Chromium, playwright-core): an operator signs
 * in with the organisation token by keyboard, stores keys (an error shown in the API's words, the
 * multi-field cloud credentials of Bedrock and Vertex, rotation, deletion after confirmation), mints a scoped token and
 * copies it from the clipboard, a completion is streamed through the proxy with that token (the
 * openai SDK), the token is revoked in the console and then refused by the proxy, the audit page
 * finds the revocation by its action filter and the usage page shows the request. Throughout: no
 * request leaves for another host, no CSP violation, no page error, the key never in the URL,
 * a cookie or localStorage. At 375 px the pages do not scroll sideways. (The charts and the roles:
 * roles-and-charts.test.ts.)
 */
import test from 'ava';
import { generateKeyPairSync } from 'node:crypto';
import OpenAI from 'openai';
import { PriceBook } from '../../src/catalog/prices.js';
import { api, createOrg, startApp } from '../support/app.js';
import { launchBrowser, Steps, watchedPage } from '../support/browser.js';
import { cleanRun, nothingLeaked, signIn, svgText, text } from '../support/console-page.js';
import { startFakeProvider, WORDS } from '../support/fake-provider.js';
import { canaryKey } from '../support/proxy-fixture.js';

test('an operator stores a key, mints and copies a token, streams with it, revokes it, and finds both in audit and usage', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_OPENAI: fake.url } });
  const org = await createOrg(app, 'console-co');
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, app.url);
  const { page } = w;
  const steps = new Steps(t, page);

  const response = await page.goto(`${app.url}/console`);
  t.is(response?.status(), 200);
  const csp = response?.headers()['content-security-policy'] ?? '';
  t.regex(csp, /default-src 'self'/);
  t.regex(csp, /script-src 'self'(;|$)/);
  t.regex(csp, /frame-ancestors 'none'/);
  t.is(response?.headers()['x-frame-options'], 'DENY');

  await steps.run('sign-in', async () => {
    await signIn(page, app.url, org.token);
    t.is(await page.locator('.who').getAttribute('data-role'), 'owner');
    t.is(await page.evaluate<number>('sessionStorage.length'), 0, 'not kept in session storage unless asked');
  });

  let openaiId = '';
  const firstKey = canaryKey('openai');
  const rotatedKey = canaryKey('openai');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  await steps.run('credentials', async () => {
    await page.getByRole('link', { name: 'Credentials' }).click();
    await page.getByRole('heading', { level: 1, name: 'Credentials' }).waitFor();
    await page.getByLabel('Provider', { exact: true }).selectOption('openai');
    // A key the provider's rules refuse: the page shows the API's own message.
    const bad = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'short' } });
    t.is(bad.status, 400);
    await page.getByLabel(/^api_key/).fill('short');
    await page.getByRole('button', { name: 'Store key' }).click();
    await page.locator('.error', { hasText: bad.body.error.message }).waitFor();
    t.is(await text(page, 'form[aria-label="Store a provider key"] .error'), bad.body.error.message);

    await page.getByLabel(/^api_key/).fill(firstKey);
    await page.getByRole('button', { name: 'Store key' }).click();
    const stored = await page.locator('p.ok', { hasText: /^Stored cred_/ }).innerText();
    openaiId = /cred_[0-9A-Za-z]{24}/.exec(stored)![0];
    await page.locator(`tr[data-id="${openaiId}"]`, { hasText: `…${firstKey.slice(-4)}` }).waitFor();

    // A multi-field cloud credential: Bedrock's region and AWS key pair.
    await page.getByLabel('Provider', { exact: true }).selectOption('bedrock');
    await page.getByLabel(/^region/).fill('eu-west-1');
    await page.getByLabel(/^aws_access_key_id/).fill('AKIAIOSFODNN7EXAMPLE');
    await page.getByLabel(/^aws_secret_access_key/).fill('wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY');
    await page.getByRole('button', { name: 'Store key' }).click();
    const bedrockId = /cred_[0-9A-Za-z]{24}/.exec(await page.locator('p.ok', { hasText: /^Stored cred_.*bedrock/ }).innerText())![0];
    await page.locator(`tr[data-id="${bedrockId}"]`, { hasText: 'region=eu-west-1' }).waitFor();
    t.is((await api(app, 'GET', `/v1/credentials/${bedrockId}`, { token: org.token })).body.region, 'eu-west-1');

    // Vertex: a multi-line JSON key typed into its text area, beside two plain fields.
    const serviceAccount = JSON.stringify({ type: 'service_account', client_email: 'console@console-proj.iam.gserviceaccount.com', private_key_id: 'k1', private_key: privateKey }, null, 2);
    await page.getByLabel('Provider', { exact: true }).selectOption('vertex');
    t.is(await page.locator('#new-service_account').evaluate((el) => el.tagName), 'TEXTAREA');
    await page.locator('#new-service_account').fill(serviceAccount);
    await page.getByLabel(/^project/).fill('console-proj');
    await page.getByLabel(/^location/).fill('europe-west4');
    await page.getByRole('button', { name: 'Store key' }).click();
    const vertexId = /cred_[0-9A-Za-z]{24}/.exec(await page.locator('p.ok', { hasText: /^Stored cred_.*vertex/ }).innerText())![0];
    await page.locator(`tr[data-id="${vertexId}"]`, { hasText: 'project=console-proj' }).waitFor();
    t.is(await page.locator('#new-service_account').inputValue(), '', 'a secret field is cleared once sent');

    // Deletion asks first; Cancel keeps it, the confirmation deletes it.
    await page.getByRole('button', { name: `Delete ${bedrockId}` }).click();
    await page.locator('button:focus', { hasText: /^Cancel$/ }).waitFor();
    await page.keyboard.press('Enter');
    await page.locator(`button:focus[aria-label="Delete ${bedrockId}"]`).waitFor();
    t.is((await api(app, 'GET', `/v1/credentials/${bedrockId}`, { token: org.token })).status, 200);
    await page.getByRole('button', { name: `Delete ${bedrockId}` }).click();
    await page.getByRole('button', { name: 'Delete for good' }).click();
    await page.locator(`tr[data-id="${bedrockId}"]`).waitFor({ state: 'detached' });
    t.is((await api(app, 'GET', `/v1/credentials/${bedrockId}`, { token: org.token })).status, 404);

    // Rotation: the tokens keep working, with the new key.
    await page.getByRole('button', { name: `Rotate ${openaiId}` }).click();
    await page.locator(`#rotate-${openaiId}-api_key`).fill(rotatedKey);
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.locator(`tr[data-id="${openaiId}"]`, { hasText: `…${rotatedKey.slice(-4)}` }).waitFor();
  });

  let tokenId = '';
  let copied = '';
  await steps.run('mint', async () => {
    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByLabel('Credential', { exact: true }).selectOption(openaiId);
    await page.getByLabel('Lifetime (ttl)').fill('15m');
    // budget_usd is sent as typed and shown back as the API words it.
    await page.getByLabel('Budget in USD (optional)').fill('5.00');
    await page.getByRole('button', { name: 'Mint token' }).click();
    await page.locator('.minted').waitFor();
    const budgeted = /tok_[0-9A-Za-z]{24}/.exec(await text(page, '.minted'))![0];
    t.is((await api(app, 'GET', `/v1/tokens/${budgeted}`, { token: org.token })).body.budget_usd, '5.00');
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByLabel('Budget in USD (optional)').fill('');
    await page.getByLabel('Models (optional)').fill('gpt-4o-mini');
    await page.getByLabel('Max requests (optional)').fill('5');
    await page.getByRole('button', { name: 'Mint token' }).click();
    const shown = await page.locator('#minted-value').inputValue();
    t.regex(shown, /^ptok_[0-9A-Za-z]{38}$/);
    tokenId = /tok_[0-9A-Za-z]{24}/.exec(await text(page, '.minted'))![0];
    await page.getByRole('button', { name: 'Copy token' }).click();
    await page.locator('.minted [role="status"]', { hasText: 'Copied.' }).waitFor();
    copied = await page.evaluate<string>('navigator.clipboard.readText()');
    t.is(copied, shown);
    const minted = await api(app, 'GET', `/v1/tokens/${tokenId}`, { token: org.token });
    t.deepEqual(minted.body.models, ['gpt-4o-mini']);
    t.is(minted.body.max_requests, 5);
    await page.getByRole('button', { name: 'Done' }).click();
    t.is(await page.locator('#minted-value').count(), 0, 'the value is gone once dismissed');
  });

  // The copied token streams a completion through the proxy, with the rotated key upstream.
  const client = new OpenAI({ apiKey: copied, baseURL: `${app.url}/v1/proxy/v1`, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], stream: true, stream_options: { include_usage: true },
  });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
  t.is(streamed, WORDS.slice(0, 3).join(''));
  t.is(fake.received.at(-1)!.headers.authorization, `Bearer ${rotatedKey}`);

  await steps.run('revoke', async () => {
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator(`tr[data-id="${tokenId}"] td.usage`, { hasText: '1 req · 11 in / 3 out' }).waitFor();
    await page.getByRole('button', { name: `Revoke ${tokenId}` }).click();
    await page.getByRole('button', { name: 'Revoke now' }).click();
    await page.locator('p.ok', { hasText: `Revoked ${tokenId}.` }).waitFor();
    await page.locator(`tr[data-id="${tokenId}"]`).waitFor({ state: 'detached' });
  });
  const refused = await fetch(`${app.url}/v1/proxy/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${copied}`, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}',
  });
  t.is(refused.status, 401);

  await steps.run('audit', async () => {
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByLabel('Action', { exact: true }).selectOption('token.revoke');
    const row = page.locator('tr[data-action="token.revoke"]');
    await row.first().waitFor();
    t.is(await row.count(), 1);
    t.true((await row.innerText()).includes(tokenId));
    t.is(await page.locator('tbody tr:not([data-action="token.revoke"])').count(), 0, 'the filter shows only that action');
    await page.getByLabel('Action', { exact: true }).selectOption('credential.delete');
    await page.locator('tr[data-action="credential.delete"]').first().waitFor();
  });

  await steps.run('usage', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.locator('[data-figure="requests"]', { hasText: /^1 of \d+$/ }).waitFor();
    t.is(await text(page, '[data-figure="tokens"]'), '11 / 3');
    // The month's spend as GET /v1/usage gives it (the spend work adds spend_usd; the request above is priced once prices are in).
    const summary = (await api(app, 'GET', '/v1/usage', { token: org.token })).body;
    t.true((await text(page, '[data-figure="spend"]')).startsWith(`$${summary.spend_usd.used}`));
    // The price book knows the model, so the streamed request cost something, and the page shows it.
    t.truthy(app.server.container.resolve(PriceBook).lookup('openai', 'gpt-4o-mini'));
    t.true(Number(summary.spend_usd.used) > 0, summary.spend_usd.used);
    // The monthly spend limit (PATCH /v1/orgs/self), set from the page.
    await page.getByLabel('Monthly spend limit (USD)').fill('25.00');
    await page.getByRole('button', { name: 'Set limit' }).click();
    await page.locator('form[aria-label="Monthly spend limit"] .ok').waitFor();
    t.is((await api(app, 'GET', '/v1/usage', { token: org.token })).body.spend_usd.limit, '25.00');
    await page.locator('[data-figure="spend"]', { hasText: /of \$25\.00$/ }).waitFor();
    // Per-day charts from GET /v1/usage/daily.
    await page.locator('[data-chart="requests"]').waitFor();
    t.is(await page.locator('[data-daily="absent"]').count(), 0);
    const today = new Date().toISOString().slice(0, 10);
    await page.locator('[data-chart="requests"] summary').click();
    t.true((await text(page, '[data-chart="requests"] table')).includes(`${today}\t1`));
    t.regex(await svgText(page, '[data-chart="requests-month"] .limit text'), /^Free tier: /);
    t.is(await page.locator('[data-chart="spend"] svg').count(), 1);
  });

  await nothingLeaked(t, w, org.token);
  await steps.run('sign-out', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#key').waitFor();
    t.is(await page.evaluate<number>('sessionStorage.length'), 0);
  });
  await cleanRun(t, w);
  const logs = app.logText();
  for (const secret of [firstKey, rotatedKey, copied, org.token, privateKey.split('\n')[1]!]) t.false(logs.includes(secret), 'no key or token in the logs');
});

test('at phone width every page fits, focus moves to each page, and a kept key survives a reload until sign-out', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const app = await startApp(t);
  const org = await createOrg(app, 'phone-co');
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, app.url, { width: 375, height: 740 });
  const { page } = w;
  const steps = new Steps(t, page);
  await steps.run('phone', async () => {
    await signIn(page, app.url, org.token, true);
    t.is(await page.evaluate<number>('sessionStorage.length'), 1, 'kept in this tab only when asked');
    for (const name of ['Credentials', 'Usage', 'Audit', 'Tokens']) {
      await page.getByRole('link', { name }).click();
      await page.getByRole('heading', { level: 1, name }).waitFor();
      await page.locator('h1:focus', { hasText: new RegExp(`^${name}$`) }).waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      t.true(overflow <= 0, `${name} scrolls sideways by ${overflow}px at 375 px`);
    }
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Tokens' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#key').waitFor();
    t.is(await page.evaluate<number>('sessionStorage.length'), 0);
    await page.reload();
    await page.locator('#key').waitFor();

    // A key that stops working (here: the org token rotated with no grace) signs the console out with the API's words.
    await signIn(page, app.url, org.token);
    // The tokens page's own reads finish first, so the refused call is the navigation's.
    await page.locator('#mint-credential_id').waitFor();
    await page.waitForLoadState('networkidle');
    const rotated = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 0 } });
    t.is(rotated.status, 200);
    const refused = await api(app, 'GET', '/v1/credentials', { token: org.token });
    t.is(refused.status, 401);
    await page.getByRole('link', { name: 'Credentials' }).click();
    await page.locator('.notice', { hasText: `Signed out: ${refused.body.error.message}` }).waitFor();
    await page.locator('#key').waitFor();
  });
  await nothingLeaked(t, w, org.token);
  await cleanRun(t, w);
});
