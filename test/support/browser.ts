/**
 * Test support: the console in a real browser. Headless Chromium (Debian's `chromium`, or
 * KEYWARD_CHROMIUM) driven by playwright-core. Each page is watched: any request to a host other
 * than the gateway is refused and recorded, as are Content-Security-Policy violations, page
 * errors and console errors, so a test can assert there were none. `step` names a stretch of a
 * test and saves a screenshot of the page to test/artifacts/ (git-ignored) when it fails.
 */
import type { ExecutionContext } from 'ava';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ROOT } from './app.js';

export const CHROMIUM = process.env.KEYWARD_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = path.join(ROOT, 'test', 'artifacts');

export async function launchBrowser(t: ExecutionContext): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  t.teardown(() => browser.close());
  return browser;
}

export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  /** URLs of requests to any host but the gateway's (all refused). */
  foreign: string[];
  /** Uncaught page errors and console errors. */
  errors: string[];
  /** CSP violations the page reported (`securitypolicyviolation` events). */
  cspViolations(): Promise<string[]>;
}

export async function watchedPage(browser: Browser, baseUrl: string, options: { width?: number; height?: number } = {}): Promise<WatchedPage> {
  const origin = new URL(baseUrl).origin;
  const context = await browser.newContext({ viewport: { width: options.width ?? 1100, height: options.height ?? 800 }, baseURL: baseUrl });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const foreign: string[] = [];
  const errors: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin !== origin) {
      foreign.push(url);
      return route.abort('blockedbyclient');
    }
    return route.continue();
  });
  // Installed by the browser before any page script (not inline in the page: the CSP does not apply to it).
  await context.addInitScript(`window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`);
  const page = await context.newPage();
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    // A refused API call is logged by the browser as a failed resource load: that is the page working, not an error of it.
    if (msg.type() === 'error' && !/Failed to load resource: the server responded with a status of (4\d\d)/.test(msg.text())) errors.push(`console: ${msg.text()}`);
  });
  return {
    page,
    context,
    foreign,
    errors,
    cspViolations: () => page.evaluate<string[]>('window.__csp ?? []'),
  };
}

/** Runs `fn`; if it throws, saves `test/artifacts/<name>.png` of the page first. */
export async function step<T>(t: ExecutionContext, page: Page, name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    mkdirSync(ARTIFACTS, { recursive: true });
    const file = path.join(ARTIFACTS, `${t.title.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 60)}--${name}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => {});
    t.log(`screenshot of the failed step: ${path.relative(ROOT, file)}`);
    throw err;
  }
}
