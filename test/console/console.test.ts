/**
 * The operators' console in a real browser (headless Chromium, playwright-core): an operator signs
 * in with the organisation token by keyboard, stores keys (a refusal shown in plain words under its
 * field, the multi-field cloud credentials of Bedrock and Vertex under the provider files' labels,
 * rotation, renaming, deletion after confirmation), mints a scoped token and copies it from the
 * clipboard, a completion is streamed through the proxy with that token (the openai SDK), the token is
 * revoked in the console (the question inside its card) and then refused by the proxy and listed under
 * revoked tokens, the audit page finds the revocation by its action filter with the token's name, and
 * the usage page shows the request. Throughout: no request leaves for another host, no CSP violation,
 * no page error, the key never in the URL, a cookie or localStorage. At 375 px the pages do not scroll
 * sideways. (The first run: first-run.test.ts; charts and roles: roles-and-charts.test.ts; admin keys,
 * trust policies and the organisation: admin-pages.test.ts.)
 */
import test from 'ava';
import { generateKeyPairSync } from 'node:crypto';
import OpenAI from 'openai';
import { PriceBook } from '../../src/pricing/prices.js';
import { api, createOrg, startApp } from '../support/app.js';
import { launchBrowser, Steps, watchedPage } from '../support/browser.js';
import { accessible } from '../support/axe.js';
import { cleanRun, fieldError, nothingLeaked, openPage, sidewaysScroll, signIn, svgText, text } from '../support/console-page.js';
import { startFakeProvider, WORDS } from '../support/fake-provider.js';
import { canaryKey } from '../support/proxy-fixture.js';

test('an operator stores a key, mints and copies a token, streams with it, revokes it, and finds both in audit and usage', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_OPENAI: fake.url } });
  const org = await createOrg(app, 'console-co');
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, app.url, { width: 1280 });
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
    t.is(await signIn(page, app.url, org.token), 'Get started', 'a new organisation opens on the guide');
    t.is(await page.locator('.who').getAttribute('data-role'), 'owner');
    t.is(await page.evaluate<number>('sessionStorage.length'), 0, 'not kept in session storage unless asked');
  });

  let openaiId = '';
  const firstKey = canaryKey('openai');
  const rotatedKey = canaryKey('openai');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  await steps.run('credentials', async () => {
    await openPage(page, 'Credentials');
    await page.getByLabel('Provider', { exact: true }).selectOption('openai');
    // A key the provider's rules refuse: the API's refusal in plain words, under the field (its code and param are the API's).
    const bad = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'short' } });
    t.like(bad.body.error, { code: 'invalid_request', param: 'api_key' });
    await page.getByLabel('API key', { exact: true }).fill('short');
    await page.getByRole('button', { name: 'Store key' }).click();
    t.is(await fieldError(page, 'new-api_key'), 'API key must be 8 to 4096 characters without spaces.');
    t.is(await page.locator('form[aria-label="Store a provider key"] p.error').count(), 0, 'not under the button');

    await page.getByLabel('API key', { exact: true }).fill(firstKey);
    await page.getByRole('button', { name: 'Store key' }).click();
    await page.locator('p.ok', { hasText: `Stored the OpenAI key (key …${firstKey.slice(-4)}).` }).waitFor();
    openaiId = (await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data[0].id;
    await page.locator(`tr[data-id="${openaiId}"]`, { hasText: `…${firstKey.slice(-4)}` }).waitFor();

    // A multi-field cloud credential: Bedrock's region and AWS key pair, under the provider file's labels.
    await page.getByLabel('Provider', { exact: true }).selectOption('bedrock');
    t.deepEqual(await page.locator('form[aria-label="Store a provider key"] label').allInnerTexts(),
      ['Provider', 'Name (optional)', 'AWS region', 'Access key ID (optional)', 'Secret access key (optional)', 'Session token (optional)', 'Bedrock API key (optional)',
        'Role ARN (optional)', 'Federated (no stored key)']);
    // A yes-flag is a checkbox beside its label (unticked is the default, so not marked optional).
    t.is(await page.locator('#new-federated').getAttribute('type'), 'checkbox');
    await page.locator('#new-name').fill('bedrock eu');
    await page.locator('#new-region').fill('eu-west-1');
    await page.locator('#new-aws_access_key_id').fill('AKIAIOSFODNN7EXAMPLE');
    // The cross-field rule's refusal names the fields by their labels.
    await page.getByRole('button', { name: 'Store key' }).click();
    t.is(await fieldError(page, 'new-aws_secret_access_key'), 'Secret access key is required with Access key ID.');
    await page.locator('#new-aws_secret_access_key').fill('wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY');
    await page.getByRole('button', { name: 'Store key' }).click();
    await page.locator('p.ok', { hasText: 'Stored "bedrock eu"' }).waitFor();
    const bedrockId = (await api(app, 'GET', '/v1/credentials?name=bedrock', { token: org.token })).body.data[0].id as string;
    await page.locator(`tr[data-id="${bedrockId}"]`, { hasText: 'AWS region: eu-west-1' }).waitFor();
    t.is((await api(app, 'GET', `/v1/credentials/${bedrockId}`, { token: org.token })).body.region, 'eu-west-1');

    // Vertex: a multi-line JSON key typed into its text area, beside two plain fields.
    const serviceAccount = JSON.stringify({ type: 'service_account', client_email: 'console@console-proj.iam.gserviceaccount.com', private_key_id: 'k1', private_key: privateKey }, null, 2);
    await page.getByLabel('Provider', { exact: true }).selectOption('vertex');
    t.is(await page.locator('#new-service_account').evaluate((el) => el.tagName), 'TEXTAREA');
    // A project id the provider's pattern refuses: "not in the expected form", with the field's help.
    await page.locator('#new-project').fill('Not A Project');
    await page.locator('#new-location').fill('europe-west4');
    await page.locator('#new-service_account').fill(serviceAccount);
    await page.getByRole('button', { name: 'Store key' }).click();
    t.is(await fieldError(page, 'new-project'), 'This project ID is not in the expected form. The Google Cloud project id, such as my-proj. Requests may use only this project.');
    await page.locator('#new-service_account').fill(serviceAccount);
    await page.locator('#new-project').fill('console-proj');
    await page.getByRole('button', { name: 'Store key' }).click();
    await page.locator('p.ok', { hasText: 'Stored the Google Vertex AI key' }).waitFor();
    const vertexId = (await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data[0].id as string;
    await page.locator(`tr[data-id="${vertexId}"]`, { hasText: 'Project ID: console-proj' }).waitFor();
    t.is(await page.locator('#new-service_account').inputValue(), '', 'a secret field is cleared once sent');
    await accessible(t, page, 'credentials');

    // Deletion asks first; Cancel keeps it, the confirmation deletes it.
    const bedrockLabel = `bedrock eu (Amazon Bedrock, key …${'wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY'.slice(-4)})`;
    await page.getByRole('button', { name: `Delete ${bedrockLabel}` }).click();
    await page.locator('button:focus', { hasText: /^Cancel$/ }).waitFor();
    await page.keyboard.press('Enter');
    await page.locator(`button:focus[aria-label="Delete ${bedrockLabel}"]`).waitFor();
    t.is((await api(app, 'GET', `/v1/credentials/${bedrockId}`, { token: org.token })).status, 200);
    await page.getByRole('button', { name: `Delete ${bedrockLabel}` }).click();
    await page.getByRole('button', { name: 'Delete for good' }).click();
    await page.locator(`tr[data-id="${bedrockId}"]`).waitFor({ state: 'detached' });
    t.is((await api(app, 'GET', `/v1/credentials/${bedrockId}`, { token: org.token })).status, 404);

    // Renaming: the list, the API and the search follow.
    const openaiLabel = `OpenAI key …${firstKey.slice(-4)}`;
    await page.getByRole('button', { name: `Rename ${openaiLabel}` }).click();
    await page.locator('#rename-name:focus').fill('prod openai');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.locator(`tr[data-id="${openaiId}"]`, { hasText: 'prod openai' }).waitFor();
    t.is((await api(app, 'GET', `/v1/credentials/${openaiId}`, { token: org.token })).body.name, 'prod openai');
    await page.locator('#credentials-search').fill('PROD');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.locator(`tr[data-id="${vertexId}"]`).waitFor({ state: 'detached' });
    t.is(await page.locator('tbody tr').count(), 1);
    await page.getByRole('button', { name: 'Show all' }).click();
    await page.locator(`tr[data-id="${vertexId}"]`).waitFor();

    // Rotation: the tokens keep working, with the new key.
    await page.getByRole('button', { name: `Rotate prod openai (OpenAI, key …${firstKey.slice(-4)})` }).click();
    await page.locator(`#rotate-${openaiId}-api_key`).fill(rotatedKey);
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.locator(`tr[data-id="${openaiId}"]`, { hasText: `…${rotatedKey.slice(-4)}` }).waitFor();
  });

  let tokenId = '';
  let budgetedId = '';
  let copied = '';
  await steps.run('mint', async () => {
    await openPage(page, 'Tokens');
    t.is(await page.locator('#mint-credential_id option:checked').innerText(), `Google Vertex AI key ${(await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data[0].key_hint}`);
    await page.getByLabel('Credential', { exact: true }).selectOption(openaiId);
    t.is(await page.locator('#mint-credential_id option:checked').innerText(), `prod openai (OpenAI, key …${rotatedKey.slice(-4)})`);
    await page.locator('#mint-ttl').fill('15m');
    // A budget the API refuses: in plain words under the field (its code is invalid_scope).
    await page.locator('#mint-budget_usd').fill('five dollars');
    await page.getByRole('button', { name: 'Mint token' }).click();
    t.is(await fieldError(page, 'mint-budget_usd'), 'Budget in USD must be an amount in US dollars above 0 with at most six decimal places, such as "12.50".');
    // budget_usd is sent as typed.
    await page.locator('#mint-budget_usd').fill('5.00');
    await page.getByRole('button', { name: 'Mint token' }).click();
    await page.locator('.minted').waitFor();
    budgetedId = (await page.locator('.minted').getAttribute('data-id'))!;
    t.is((await api(app, 'GET', `/v1/tokens/${budgetedId}`, { token: org.token })).body.budget_usd, '5.00');
    await page.getByRole('button', { name: 'Done' }).click();
    await page.locator('#mint-budget_usd').fill('');
    await page.locator('#mint-name').fill('streaming agent');
    await page.locator('#mint-models').fill('gpt-4o-mini');
    await page.locator('#mint-max_requests').fill('5');
    await page.getByRole('button', { name: 'Mint token' }).click();
    await page.locator('#minted-value').waitFor();
    const shown = await page.locator('#minted-value').innerText();
    t.regex(shown, /^ptok_[0-9A-Za-z]{38}$/);
    tokenId = (await page.locator('.minted').getAttribute('data-id'))!;
    t.is(await text(page, '.sdk pre[data-kind="env"]'), `OPENAI_BASE_URL=${app.url}/v1/proxy/v1\nOPENAI_API_KEY=${shown}`);
    await page.getByRole('button', { name: 'Copy token' }).click();
    await page.locator('.minted .copy [role="status"]', { hasText: 'Copied.' }).waitFor();
    copied = await page.evaluate<string>('navigator.clipboard.readText()');
    t.is(copied, shown);
    const minted = await api(app, 'GET', `/v1/tokens/${tokenId}`, { token: org.token });
    t.deepEqual(minted.body.models, ['gpt-4o-mini']);
    t.is(minted.body.max_requests, 5);
    t.is(minted.body.name, 'streaming agent');
    await accessible(t, page, 'tokens with a minted token');
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
    // Its caps as its refusals read them: the same figures as GET /v1/tokens/:id's `caps`.
    const caps = (await api(app, 'GET', `/v1/tokens/${tokenId}`, { token: org.token })).body.caps;
    t.is(caps.max_requests.used, 1);
    t.true((await page.locator(`tr[data-id="${tokenId}"]`).innerText()).includes(`requests 1 used, ${caps.max_requests.held} held of 5`));
    t.true((await page.locator(`tr[data-id="${budgetedId}"]`).innerText()).includes('budget $0.00 used, $0.00 held of $5.00'));
    await page.getByRole('button', { name: 'Revoke "streaming agent"' }).click();
    // The question stays inside its card (and the table's visible box) at 1280 px.
    const question = await page.locator('.confirm.asking').boundingBox();
    const card = await page.locator('section.card', { has: page.locator('.confirm.asking') }).boundingBox();
    const wrap = await page.locator('.table-wrap', { has: page.locator('.confirm.asking') }).boundingBox();
    t.true(question!.x + question!.width <= card!.x + card!.width, 'the question is inside its card');
    t.true(question!.x + question!.width <= wrap!.x + wrap!.width, 'the question is not scrolled out of view');
    t.is(await page.locator('.table-wrap').evaluate((el) => el.scrollWidth - el.clientWidth), 0, 'the table does not scroll sideways');
    await accessible(t, page, 'the revoke question');
    await page.getByRole('button', { name: 'Revoke now' }).click();
    await page.locator('p.ok', { hasText: 'Revoked "streaming agent". It is listed under Revoked tokens.' }).waitFor();
    await page.locator(`tr[data-id="${tokenId}"]`).waitFor({ state: 'detached' });
    // Listed under Revoked tokens, with when and by whom.
    await page.getByLabel('Show').selectOption('revoked');
    const row = page.locator(`tr[data-id="${tokenId}"]`);
    await row.waitFor();
    t.regex(await row.innerText(), /streaming agent[\s\S]*revoked[\s\S]*prod openai/);
    t.true((await row.innerText()).includes((await api(app, 'GET', '/v1/orgs/self', { token: org.token })).body.caller.id));
    t.is(await page.getByRole('button', { name: /^Revoke/ }).count(), 0, 'nothing to revoke among revoked tokens');
    await accessible(t, page, 'revoked tokens');
    await page.getByLabel('Show').selectOption('live');
  });
  const refused = await fetch(`${app.url}/v1/proxy/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${copied}`, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}',
  });
  t.is(refused.status, 401);

  await steps.run('audit', async () => {
    await openPage(page, 'Audit');
    await page.getByLabel('Action', { exact: true }).selectOption('token.revoke');
    const row = page.locator('tr[data-action="token.revoke"]');
    await row.first().waitFor();
    t.is(await row.count(), 1);
    t.true((await row.innerText()).includes(tokenId));
    t.true((await row.innerText()).includes('streaming agent'), 'the target by its name');
    await accessible(t, page, 'audit');
    t.is(await page.locator('tbody tr:not([data-action="token.revoke"])').count(), 0, 'the filter shows only that action');
    await page.getByLabel('Action', { exact: true }).selectOption('credential.delete');
    await page.locator('tr[data-action="credential.delete"]').first().waitFor();
  });

  await steps.run('usage', async () => {
    await openPage(page, 'Usage');
    await page.locator('[data-figure="requests"]', { hasText: /^1 of 10,000( \([0-9,]+ held\))?$/ }).waitFor();
    t.is(await text(page, '[data-figure="tokens"]'), '11 / 3');
    // The month's spend as GET /v1/usage gives it (the spend work adds spend_usd; the request above is priced once prices are in).
    const summary = (await api(app, 'GET', '/v1/usage', { token: org.token })).body;
    t.true((await text(page, '[data-figure="spend"]')).startsWith(`$${summary.spend_usd.used}`));
    // The price book knows the model, so the streamed request cost something, and the page shows it.
    t.truthy(app.server.container.resolve(PriceBook).lookup('openai', 'gpt-4o-mini'));
    t.true(Number(summary.spend_usd.used) > 0, summary.spend_usd.used);
    // The monthly spend limit (PATCH /v1/orgs/self), set from the page.
    await page.getByLabel('Monthly spend limit in USD').fill('25.00');
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
    await accessible(t, page, 'usage');
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
    t.is(await signIn(page, app.url, org.token, true), 'Get started');
    t.is(await page.evaluate<number>('sessionStorage.length'), 1, 'kept in this tab only when asked');
    for (const name of ['Credentials', 'Usage', 'Audit', 'Admin keys', 'Trust policies', 'Organisation', 'Tokens']) {
      await openPage(page, name);
      await page.waitForLoadState('networkidle');
      const overflow = await sidewaysScroll(page);
      t.true(overflow <= 0, `${name} scrolls sideways by ${overflow}px at 375 px`);
      await accessible(t, page, `${name} at 375 px`);
    }
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Tokens' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#key').waitFor();
    t.is(await page.evaluate<number>('sessionStorage.length'), 0);
    await page.reload();
    await page.locator('#key').waitFor();

    // A key that stops working (here: the org token rotated elsewhere with no grace) signs the console out, saying why in plain words.
    await signIn(page, app.url, org.token);
    // The page's own reads finish first, so the refused call is the navigation's.
    await page.waitForLoadState('networkidle');
    const rotated = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 0 } });
    t.is(rotated.status, 200);
    const refused = await api(app, 'GET', '/v1/credentials', { token: org.token });
    t.is(refused.status, 401);
    await page.getByRole('link', { name: 'Credentials' }).click();
    await page.locator('.notice', { hasText: 'Signed out: this key is no longer accepted (it was revoked, expired or replaced). Sign in with a current one.' }).waitFor();
    await page.locator('#key').waitFor();
    // A wrong key is refused under the key field.
    await page.locator('#key').fill(org.token);
    await page.keyboard.press('Enter');
    t.is(await fieldError(page, 'key'), 'This key is not accepted: it may be mistyped, revoked, expired or replaced.');
    await accessible(t, page, 'sign-in refused');
  });
  await nothingLeaked(t, w, org.token);
  await cleanRun(t, w);
});
