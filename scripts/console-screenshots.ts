/**
 * `npm run console:screenshots`: the README's pictures of the console (docs/console-*.png). Starts a
 * gateway with a fake provider on 127.0.0.1, fills it with a few keys, tokens and requests through
 * the admin API and the proxy, and photographs each page in headless Chromium (KEYWARD_CHROMIUM or
 * /usr/bin/chromium). The per-day charts need GET /v1/usage/daily: when this gateway does not serve
 * it yet, the usage picture is taken with it (and this month's figures) answered by sample days (said in the log).
 * Small PNGs: 1000 px wide, one device pixel per CSS pixel.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { loadConfig } from '../src/config.js';
import { buildServer } from '../src/container.js';
import { createLogger } from '../src/log.js';
import { startFakeProvider } from '../test/support/fake-provider.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN = 'screenshots-admin-token-0123456789';

const fake = await startFakeProvider();
const dataDir = mkdtempSync(path.join(tmpdir(), 'keyward-shots-'));
const config = loadConfig({
  HOST: '127.0.0.1', PORT: '0', KEYWARD_DATA_DIR: dataDir, KEYWARD_ADMIN_TOKEN: ADMIN, KEYWARD_LOG_LEVEL: 'error',
  KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_UPSTREAM_ANTHROPIC: fake.url,
});
const server = await buildServer(config, createLogger('error', new Writable({ write: (_c, _e, cb) => cb() })));
const { port } = await server.http.listen();
const base = `http://127.0.0.1:${port}`;

async function call(method: string, p: string, token: string, body?: unknown): Promise<any> {
  const res = await fetch(base + p, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return res.json();
}

const browser = await chromium.launch({ executablePath: process.env.KEYWARD_CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
try {
  const org = await call('POST', '/v1/orgs', ADMIN, { name: 'acme' });
  const openai = await call('POST', '/v1/credentials', org.token, { provider: 'openai', api_key: 'sk-demo-0123456789abcdefWXYZ' });
  await call('POST', '/v1/credentials', org.token, { provider: 'anthropic', api_key: 'sk-ant-demo-key-QRST' });
  await call('POST', '/v1/credentials', org.token, { provider: 'bedrock', region: 'eu-west-1', aws_access_key_id: 'AKIAIOSFODNN7EXAMPLE', aws_secret_access_key: 'wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY' });
  const ci = await call('POST', '/v1/tokens', org.token, { credential_id: openai.id, ttl: '7d', models: ['gpt-4o-mini'], max_requests: 1000 });
  await call('POST', '/v1/tokens', org.token, { credential_id: openai.id, ttl: '1h', rate_limit: 60 });
  for (let i = 0; i < 3; i++) {
    await fetch(`${base}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${ci.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) });
  }

  const context = await browser.newContext({ viewport: { width: 1000, height: 700 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const daily = await fetch(`${base}/v1/usage/daily`, { headers: { authorization: `Bearer ${org.token}` } });
  if (daily.status === 404) {
    console.log('GET /v1/usage/daily is not served here: the usage picture uses sample days');
    const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
    const data = Array.from({ length: 30 }, (_, i) => ({
      date: new Date(today - (29 - i) * 86_400_000).toISOString().slice(0, 10),
      requests: Math.round(180 + 120 * Math.sin(i / 3) + 8 * i), input_tokens: 40_000 + 900 * i, output_tokens: 12_000 + 500 * i, spend_usd: (0.6 + 0.05 * i).toFixed(6),
    }));
    await page.route('**/v1/usage/daily**', (route) => route.fulfill({ json: { object: 'list', data } }));
    // And this month's figures to match them, with a monthly spend limit (PATCH /v1/orgs/self's spend_limit_usd).
    const period = new Date().toISOString().slice(0, 7);
    const month = data.filter((d) => d.date.startsWith(period));
    const sum = (f: (d: (typeof data)[number]) => number) => month.reduce((s, d) => s + f(d), 0);
    await page.route('**/v1/usage', (route) => route.fulfill({ json: {
      object: 'usage', period, proxy_requests: { used: sum((d) => d.requests), limit: 10000 }, credentials: { used: 3, limit: 10 },
      tokens: { input: sum((d) => d.input_tokens), output: sum((d) => d.output_tokens) },
      spend_usd: { used: sum((d) => Number(d.spend_usd)).toFixed(2), limit: '40.00' },
    } }));
  }
  await page.goto(`${base}/console`);
  await page.locator('#key').fill(org.token);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Tokens' }).waitFor();
  await page.getByLabel('Models (optional)').fill('gpt-4o-mini');
  await page.getByRole('button', { name: 'Mint token' }).click();
  await page.locator('#minted-value').waitFor();
  await page.locator('tbody tr').first().waitFor();
  const shots: Array<[string, string]> = [['tokens', 'Tokens'], ['credentials', 'Credentials'], ['usage', 'Usage'], ['audit', 'Audit']];
  for (const [file, name] of shots) {
    if (name !== 'Tokens') {
      await page.getByRole('link', { name }).click();
      await page.getByRole('heading', { level: 1, name }).waitFor();
    }
    await page.waitForLoadState('networkidle');
    await page.mouse.move(0, 0);
    const out = path.join(ROOT, 'docs', `console-${file}.png`);
    await page.screenshot({ path: out, fullPage: name === 'Usage' });
    console.log(`${path.relative(ROOT, out)} (${statSync(out).size} bytes)`);
  }
} finally {
  await browser.close();
  await server.shutdown();
  await fake.close();
  rmSync(dataDir, { recursive: true, force: true });
}
