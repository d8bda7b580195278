/**
 * `npm run console:screenshots`: the pictures of docs/operate/console.md (docs/images/console-*.png). Starts a gateway
 * with a fake provider on 127.0.0.1 and photographs the console in headless Chromium (KEYWARD_CHROMIUM
 * or /usr/bin/chromium): a new organisation's first-run guide (empty, then with a key stored and a token
 * minted: its SDK variables), then, filled through the admin API and the proxy with named keys, tokens,
 * admin keys, a trust policy and a few requests, each page (Spend by token and by model from those
 * requests; the organisation as an OIDC issuer's, with its federation subject); and the minted token and
 * the Spend page at phone width. The
 * usage picture is taken with a month of sample days (GET /v1/usage and /v1/usage/daily answered by this
 * script, said in the log): a few test requests draw nothing worth showing.
 * Small PNGs: 1100 px wide (375 for the phone), one device pixel per CSS pixel.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { loadConfig } from '../src/settings/config.js';
import { buildServer } from '../src/boot/container.js';
import { createLogger } from '../src/log.js';
import { startFakeProvider } from '../test/support/fake-provider.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN = 'screenshots-admin-token-0123456789';

const fake = await startFakeProvider();
const dataDir = mkdtempSync(path.join(tmpdir(), 'keyward-shots-'));
const config = loadConfig({
  HOST: '127.0.0.1', PORT: '0', KEYWARD_DATA_DIR: dataDir, KEYWARD_ADMIN_TOKEN: ADMIN, KEYWARD_LOG_LEVEL: 'error',
  KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_UPSTREAM_ANTHROPIC: fake.url, KEYWARD_ISSUER_URL: 'https://keyward.example.com',
});
const server = await buildServer(config, createLogger('error', new Writable({ write: (_c, _e, cb) => cb() })));
const { port } = await server.http.listen();
const base = `http://127.0.0.1:${port}`;

async function call(method: string, p: string, token: string, body?: unknown): Promise<any> {
  const res = await fetch(base + p, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function shoot(page: Page, file: string, fullPage = false): Promise<void> {
  await page.waitForLoadState('networkidle');
  await page.mouse.move(0, 0);
  const out = path.join(ROOT, 'docs', 'images', `console-${file}.png`);
  await page.screenshot({ path: out, fullPage });
  console.log(`${path.relative(ROOT, out)} (${statSync(out).size} bytes)`);
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(`${base}/console`);
  await page.locator('#key').fill(token);
  await page.keyboard.press('Enter');
  await page.locator('h1:focus').waitFor();
}

async function open(page: Page, title: string): Promise<void> {
  await page.getByRole('navigation').getByRole('link', { name: title, exact: true }).click();
  await page.locator('h1:focus', { hasText: title }).waitFor();
}

/** Sample days for the charts where this gateway keeps none, and this month's figures to match. */
async function sampleUsage(page: Page): Promise<void> {
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const data = Array.from({ length: 30 }, (_, i) => ({
    date: new Date(today - (29 - i) * 86_400_000).toISOString().slice(0, 10),
    requests: Math.round(180 + 120 * Math.sin(i / 3) + 8 * i), input_tokens: 40_000 + 900 * i, output_tokens: 12_000 + 500 * i, spend_usd: (0.6 + 0.05 * i).toFixed(6),
  }));
  await page.route('**/v1/usage/daily**', (route) => route.fulfill({ json: { object: 'list', data } }));
  const period = new Date().toISOString().slice(0, 7);
  const month = data.filter((d) => d.date.startsWith(period));
  const sum = (f: (d: (typeof data)[number]) => number) => month.reduce((s, d) => s + f(d), 0);
  await page.route('**/v1/usage', (route) => route.fulfill({ json: {
    object: 'usage', period, proxy_requests: { used: sum((d) => d.requests), limit: 10000 }, credentials: { used: 3, limit: 10 },
    tokens: { input: sum((d) => d.input_tokens), output: sum((d) => d.output_tokens) },
    spend_usd: { used: sum((d) => Number(d.spend_usd)).toFixed(2), limit: '40.00' },
  } }));
}

const browser = await chromium.launch({ executablePath: process.env.KEYWARD_CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
try {
  // The first run: a new organisation, its guide empty, then done.
  const fresh = await call('POST', '/v1/orgs', ADMIN, { name: 'newco' });
  const first = await (await browser.newContext({ viewport: { width: 1100, height: 760 }, deviceScaleFactor: 1 })).newPage();
  await signIn(first, fresh.token);
  await shoot(first, 'start');
  await first.locator('#new-name').fill('prod openai');
  await first.locator('#new-api_key').fill('sk-demo-first-run-0123456789WXYZ');
  await first.getByRole('button', { name: 'Store key' }).click();
  await first.locator('#mint-name').fill('evals agent');
  await first.getByRole('button', { name: 'Mint token' }).click();
  await first.locator('#minted-value').waitFor();
  await first.locator('[data-step="3"]').scrollIntoViewIfNeeded();
  await shoot(first, 'start-done');

  // An organisation in use.
  const org = await call('POST', '/v1/orgs', ADMIN, { name: 'acme' });
  const openai = await call('POST', '/v1/credentials', org.token, { provider: 'openai', name: 'prod openai', api_key: 'sk-demo-0123456789abcdefWXYZ' });
  await call('POST', '/v1/credentials', org.token, { provider: 'anthropic', name: 'claude research', api_key: 'sk-ant-demo-key-QRST' });
  await call('POST', '/v1/credentials', org.token, { provider: 'bedrock', name: 'bedrock eu', region: 'eu-west-1', aws_access_key_id: 'AKIAIOSFODNN7EXAMPLE', aws_secret_access_key: 'wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY' });
  const ci = await call('POST', '/v1/tokens', org.token, { credential_id: openai.id, name: 'ci evals', ttl: '7d', models: ['gpt-4o-mini'], max_requests: 1000 });
  const support = await call('POST', '/v1/tokens', org.token, { credential_id: openai.id, name: 'support bot', ttl: '1h', rate_limit: 60 });
  const old = await call('POST', '/v1/tokens', org.token, { credential_id: openai.id, name: 'laptop test', ttl: '1d' });
  await call('DELETE', `/v1/tokens/${old.id}`, org.token);
  await call('POST', '/v1/admin-keys', org.token, { name: 'deploy pipeline', role: 'minter', credential_ids: [openai.id], ttl: '90d' });
  await call('POST', '/v1/admin-keys', org.token, { name: 'finance dashboard', role: 'viewer' });
  await call('POST', '/v1/trust-policies', org.token, {
    issuer: 'https://token.actions.githubusercontent.com', audience: base, subject: 'repo:acme/app:ref:refs/heads/main',
    claims: { repository_owner_id: '1234567' }, credential_id: openai.id, ttl: '30m', models: ['gpt-4o-mini'],
  });
  const openaiEu = await call('POST', '/v1/credentials', org.token, { provider: 'openai', name: 'openai eu project', api_key: 'sk-demo-eu-0123456789abcdWXYZ' });
  await call('POST', '/v1/pools', org.token, { name: 'openai keys', strategy: 'round_robin', members: [{ credential_id: openai.id }, { credential_id: openaiEu.id, weight: 2 }] });
  const claude = await call('POST', '/v1/credentials', org.token, { provider: 'anthropic', name: 'claude evals', api_key: 'sk-ant-demo-key-evals-WXYZ' });
  const researcher = await call('POST', '/v1/tokens', org.token, { credential_id: claude.id, name: 'research agent', ttl: '7d' });
  const send = async (token: string, p: string, body: unknown, events: number) => {
    const r = await fetch(`${base}/v1/proxy/${p}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-fake-events': String(events) }, body: JSON.stringify(body) });
    await r.text();
  };
  for (let i = 0; i < 3; i++) await send(ci.token, 'v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, 400);
  for (let i = 0; i < 2; i++) await send(support.token, 'v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, 300);
  for (let i = 0; i < 4; i++) await send(researcher.token, 'v1/messages', { model: 'claude-sonnet-4-6', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] }, 500);

  const page = await (await browser.newContext({ viewport: { width: 1100, height: 760 }, deviceScaleFactor: 1 })).newPage();
  // Three requests make a thin picture: the usage page is photographed with a month of sample days.
  console.log('the usage picture uses sample days (GET /v1/usage and /v1/usage/daily answered by this script)');
  await sampleUsage(page);
  await signIn(page, org.token);
  await page.locator('#mint-credential_id').selectOption(openai.id);
  await page.locator('#mint-name').fill('research agent');
  await page.locator('#mint-models').fill('gpt-4o-mini');
  await page.getByRole('button', { name: 'Mint token' }).click();
  await page.locator('#minted-value').waitFor();
  await page.locator('tbody tr').first().waitFor();
  await shoot(page, 'tokens');
  await page.getByRole('button', { name: 'Done' }).click();
  await page.getByLabel('Show').selectOption('revoked');
  await page.locator('tr', { hasText: 'laptop test' }).waitFor();
  await shoot(page, 'tokens-revoked');
  await open(page, 'Credentials');
  await page.getByLabel('Provider', { exact: true }).selectOption('bedrock');
  await shoot(page, 'credentials');
  await open(page, 'Pools');
  await page.locator('tbody tr').first().waitFor();
  await shoot(page, 'pools');
  await open(page, 'Usage');
  await page.locator('[data-chart="spend"]').waitFor();
  await shoot(page, 'usage', true);
  await page.unrouteAll();
  await open(page, 'Spend');
  await page.locator('table.records tbody tr').nth(2).waitFor();
  await shoot(page, 'spend', true);
  await page.locator('#spend-by').selectOption('model');
  await page.locator('tr[data-key="claude-sonnet-4-6"]').waitFor();
  await shoot(page, 'spend-models', true);
  await open(page, 'Audit');
  await page.locator('tbody tr').first().waitFor();
  await shoot(page, 'audit');
  await open(page, 'Admin keys');
  await page.locator('tbody tr').first().waitFor();
  await shoot(page, 'admin-keys');
  await open(page, 'Trust policies');
  await page.locator('tbody tr').first().waitFor();
  await shoot(page, 'trust-policies');
  await open(page, 'Organisation');
  await shoot(page, 'organisation');

  // At phone width: a minted token and its SDK variables, every character visible.
  const phone = await (await browser.newContext({ viewport: { width: 375, height: 780 }, deviceScaleFactor: 1 })).newPage();
  await signIn(phone, org.token);
  await phone.locator('#mint-credential_id').selectOption(openai.id);
  await phone.locator('#mint-name').fill('phone agent');
  await phone.getByRole('button', { name: 'Mint token' }).click();
  await phone.locator('#minted-value').waitFor();
  await shoot(phone, 'phone-minted');
  await phone.getByRole('button', { name: 'Done' }).click();
  await open(phone, 'Spend');
  await phone.locator('table.records tbody tr').nth(2).waitFor();
  await shoot(phone, 'phone-spend', true);
} finally {
  await browser.close();
  await server.shutdown();
  await fake.close();
  rmSync(dataDir, { recursive: true, force: true });
}
