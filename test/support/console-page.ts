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

/**
 * Opens /console and signs in with the keyboard only (the key field has the focus), `keep` ticking "keep me
 * signed in"; resolves with the heading of the page the console opens on (Get started or Tokens).
 */
export async function signIn(page: Page, baseUrl: string, token: string, keep = false): Promise<string> {
  await page.goto(`${baseUrl}/console`);
  // The key field has the focus: type and press Enter, no mouse.
  // `:focus` selectors, not waitForFunction: its polling evaluates a string, which the page's CSP (rightly) refuses.
  await page.locator('#key:focus').waitFor();
  await page.keyboard.type(token);
  if (keep) await page.getByLabel(/Keep me signed in/).check();
  await page.keyboard.press('Enter');
  await page.locator('h1:focus').waitFor();
  return page.locator('h1').innerText();
}

/** Opens a page from the navigation and waits until its heading has the focus. */
export async function openPage(page: Page, title: string): Promise<void> {
  await page.getByRole('navigation').getByRole('link', { name: title, exact: true }).click();
  await page.locator('h1:focus', { hasText: new RegExp(`^${title}$`) }).waitFor();
}

/** How far the page scrolls sideways (0 or less: it fits). */
export const sidewaysScroll = (page: Page) => page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');

/** The field's error message in plain words, after checking it is wired to the field (aria-invalid, aria-describedby). */
export async function fieldError(page: Page, inputId: string): Promise<string> {
  const input = page.locator(`#${inputId}`);
  const error = page.locator(`#${inputId}-error`);
  await error.waitFor();
  if ((await input.getAttribute('aria-invalid')) !== 'true') throw new Error(`#${inputId} is not marked aria-invalid`);
  if (!(await input.getAttribute('aria-describedby'))?.split(' ').includes(`${inputId}-error`)) throw new Error(`#${inputId} is not described by its error`);
  return error.innerText();
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
