/**
 * The console with tools in a real browser: the credential form offers the tool and MCP providers under the
 * labels their files give, the mint form shows the Tools field only for an MCP server's credential and sends
 * it as the `tools` scope, and after minting the MCP client's `mcpServers` entry is shown with the token.
 */
import test from 'ava';
import { api, createOrg, startApp } from '../support/app.js';
import { launchBrowser, watchedPage } from '../support/browser.js';
import { cleanRun, openPage, signIn, text } from '../support/console-page.js';

test('console: a GitHub MCP credential stored under its label, a token minted with tools, its mcpServers entry shown', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const app = await startApp(t);
  const org = await createOrg(app, 'tools-co');
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, app.url, { width: 1280 });
  const { page } = w;
  await signIn(page, app.url, org.token);

  await openPage(page, 'Credentials');
  await page.getByLabel('Provider', { exact: true }).selectOption('github-mcp');
  await page.getByLabel('Personal access token', { exact: true }).fill('ghp_0123456789abcdefghijklmnop');
  await page.getByRole('button', { name: 'Store key' }).click();
  await page.locator('p.ok', { hasText: 'Stored the GitHub MCP server key (key …mnop).' }).waitFor();
  const openai = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-openai-0123456789abcdef' } });
  const creds = (await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data as Array<{ id: string; provider: string }>;
  const mcpId = creds.find((c) => c.provider === 'github-mcp')!.id;

  await openPage(page, 'Tokens');
  await page.getByLabel('Credential', { exact: true }).selectOption(openai.body.id);
  t.is(await page.locator('#mint-tools').count(), 0, 'no Tools field for a model API');
  await page.getByLabel('Credential', { exact: true }).selectOption(mcpId);
  await page.locator('#mint-tools').fill('get_issue list_*');
  await page.locator('#mint-ttl').fill('15m');
  await page.getByRole('button', { name: 'Mint token' }).click();
  await page.locator('#minted-value').waitFor();
  const shown = await page.locator('#minted-value').innerText();
  const tokenId = (await page.locator('.minted').getAttribute('data-id'))!;
  t.deepEqual((await api(app, 'GET', `/v1/tokens/${tokenId}`, { token: org.token })).body.tools, ['get_issue', 'list_*']);
  const snippet = await text(page, '.sdk pre[data-kind="code"]');
  t.is(JSON.parse(snippet).mcpServers.github.url, `${app.url}/v1/proxy/mcp/`);
  t.is(JSON.parse(snippet).mcpServers.github.headers.Authorization, `Bearer ${shown}`);
  await cleanRun(t, w);
});
