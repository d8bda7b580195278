/**
 * Test support: the console in a real browser. Headless Chromium (Debian's `chromium`, or
 * KEYWARD_CHROMIUM) driven by playwright-core. Each page is watched: any request to a host other
 * than the gateway is refused and recorded, as are Content-Security-Policy violations, page
 * errors and console errors, so a test can assert there were none. `Steps` names the stretches of a
 * test and, when one fails, saves a screenshot of each page it went through to test/artifacts/.
 */
import type { ExecutionContext } from 'ava';
import { mkdirSync, writeFileSync } from 'node:fs';
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

/** `alsoAllow`: origins the page may navigate to besides the gateway's (a stand-in SaaS's consent page). */
export async function watchedPage(browser: Browser, baseUrl: string, options: { width?: number; height?: number; alsoAllow?: readonly string[] } = {}): Promise<WatchedPage> {
  const origin = new URL(baseUrl).origin;
  const context = await browser.newContext({ viewport: { width: options.width ?? 1100, height: options.height ?? 800 }, baseURL: baseUrl });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const foreign: string[] = [];
  const errors: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin !== origin && !(options.alsoAllow ?? []).includes(new URL(url).origin)) {
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

/**
 * The named stretches of one test on one page. After each stretch that passes, a picture of the
 * page is kept in memory; when a stretch fails, every picture so far and one of the failing page
 * are written to test/artifacts/ (git-ignored), so a failure shows each page the test went through.
 */
export class Steps {
  private readonly shots: Array<[string, Buffer]> = [];

  constructor(private readonly t: ExecutionContext, private readonly page: Page) {}

  async run<T>(name: string, fn: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await fn();
    } catch (err) {
      await this.save(name);
      throw err;
    }
    const shot = await this.page.screenshot({ fullPage: true }).catch(() => undefined);
    if (shot) this.shots.push([name, shot]);
    return result;
  }

  private async save(failed: string): Promise<void> {
    mkdirSync(ARTIFACTS, { recursive: true });
    const prefix = path.join(ARTIFACTS, this.t.title.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 60));
    this.shots.forEach(([name, png], i) => writeFileSync(`${prefix}--${i + 1}-${name}.png`, png));
    const file = `${prefix}--${this.shots.length + 1}-${failed}-FAILED.png`;
    await this.page.screenshot({ path: file, fullPage: true }).catch(() => {});
    this.t.log(`screenshots of each step, the failed one last: ${path.relative(ROOT, prefix)}--*.png`);
  }
}
