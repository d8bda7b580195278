/**
 * Test support for the console's browser tests: signing in by keyboard, reading text off the page
 * (SVG included), and the checks every session ends with (nothing leaked, nothing foreign, no CSP
 * violation, no page error).
 */
import type { ExecutionContext } from 'ava';
import type { Page } from 'playwright-core';
import type { WatchedPage } from './browser.js';

/** The inner text of the first match. */
export const text = (page: Page, selector: string) => page.locator(selector).first().innerText();
/** SVG text has no innerText. */
export const svgText = async (page: Page, selector: string) => (await page.locator(selector).first().textContent()) ?? '';

/** Opens /console and signs in with the keyboard only (the key field has the focus), `keep` ticking "stay signed in". */
export async function signIn(page: Page, baseUrl: string, token: string, keep = false): Promise<void> {
  await page.goto(`${baseUrl}/console`);
  // The key field has the focus: type and press Enter, no mouse.
  // `:focus` selectors, not waitForFunction: its polling evaluates a string, which the page's CSP (rightly) refuses.
  await page.locator('#key:focus').waitFor();
  await page.keyboard.type(token);
  if (keep) await page.getByLabel(/Stay signed in/).check();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Tokens' }).waitFor();
}

/** The key is in no URL, localStorage or cookie. */
export async function nothingLeaked(t: ExecutionContext, w: WatchedPage, secret: string): Promise<void> {
  t.false(w.page.url().includes(secret), 'the key is never in the URL');
  const stored = await w.page.evaluate<{ local: string; cookie: string }>('({ local: JSON.stringify({ ...localStorage }), cookie: document.cookie })');
  t.false(stored.local.includes(secret), 'the key is never in localStorage');
  t.is(stored.cookie, '', 'the console sets no cookie');
  t.deepEqual((await w.context.cookies()).map((c) => c.name), []);
}

/** No request to another host, no CSP violation, no page or console error. */
export async function cleanRun(t: ExecutionContext, w: WatchedPage): Promise<void> {
  t.deepEqual(w.foreign, [], 'no request to any other host');
  t.deepEqual(await w.cspViolations(), [], 'no Content-Security-Policy violation');
  t.deepEqual(w.errors, [], 'no page or console error');
}
