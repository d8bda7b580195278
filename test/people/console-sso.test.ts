/**
 * The console's single sign-on in Chromium against a real OpenID provider (oidc-provider): the sign-in page
 * (organisation prefilled from `?org=`, "Sign in with <provider>"), the provider's pages, back to the console
 * signed in by an HttpOnly cookie, every admin call carrying the session's X-Keyward-CSRF (one without it: 403
 * csrf_required), the Members page (budget set, member removed), sign-out ending the session at the gateway;
 * and the refusals a person sees as the console's sign-in page saying why: a wrong `state`, a replayed code,
 * a disallowed e-mail domain, and an expired session (the gateway's injected clock) sending the console back.
 * Each new page is checked with axe-core.
 */
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import { accessible } from '../support/axe.js';
import { api } from '../support/app.js';
import { launchBrowser, watchedPage, type WatchedPage } from '../support/browser.js';
import { ManualClock } from '../support/clocks.js';
import { cleanRun, openPage, text } from '../support/console-page.js';
import { signIn as httpSignIn, sessionCall } from '../support/sign-in.js';
import { eventually } from '../support/wait.js';
import { ssoSetup, type SsoSetup } from './_setup.js';

/** A fresh browser context on the console (the provider's own sign-in session starts empty in each). */
async function consoleFor(t: Parameters<typeof ssoSetup>[0], setup: SsoSetup, browser?: Browser): Promise<WatchedPage> {
  return watchedPage(browser ?? (await launchBrowser(t)), setup.gateway, { alsoAllow: [new URL(setup.provider.issuer).origin] });
}

/** From the sign-in page with the organisation prefilled, through the provider, back to the console; the heading that opens. */
async function signInBySso(page: Page, setup: SsoSetup): Promise<void> {
  await page.goto(`${setup.gateway}/console/?org=${setup.org.id}`);
  const start = page.locator('#sso-start:focus');
  await start.waitFor();
  await page.keyboard.press('Enter');
}

/**
 * The callback URL the provider sends the browser to, kept from the gateway: the provider's redirect is rewritten
 * on its way out to the console's page (a browser's route cannot stop a redirect), as a tampering network would.
 */
async function catchCallback(page: Page, setup: SsoSetup): Promise<string> {
  // The provider's redirect to the callback is caught and turned to the gateway's /readyz instead: the test holds an
  // unused code and state, and the page rests on a document with no script (nothing left to cut the next navigation).
  let caught: string | undefined;
  const callbackPrefix = `${setup.gateway}/v1/sso/callback`;
  const resting = `${setup.gateway}/readyz`;
  setup.provider.intercept = (_req, res) => {
    const setHeader = res.setHeader.bind(res);
    res.setHeader = (name: string, value: number | string | readonly string[]) => {
      if (name.toLowerCase() === 'location' && String(value).startsWith(callbackPrefix)) {
        caught = String(value);
        return setHeader(name, resting);
      }
      return setHeader(name, value);
    };
    return false;
  };
  await signInBySso(page, setup);
  await eventually(() => caught !== undefined, 'the provider sends the browser back');
  setup.provider.intercept = undefined;
  await page.waitForURL(resting);
  await page.waitForLoadState('load');
  return caught!;
}

const sessionCookie = async (w: WatchedPage) => (await w.context.cookies()).find((c) => c.name === 'keyward_session');

test('the console signs in by single sign-on in Chromium; admin calls carry the CSRF value; Members page; sign-out ends the session', async (t) => {
  const setup = await ssoSetup(t);
  const { app, gateway, provider, org } = setup;
  provider.nextPerson = { sub: 'bob', email: 'bob@acme.test', name: 'Bob', groups: ['engineers'] };
  const bob = await httpSignIn(gateway, org.id);
  t.is(bob.response.status, 302);
  provider.nextPerson = { sub: 'ada', email: 'ada@acme.test', name: 'Ada Lovelace', groups: ['admins'] };
  const w = await consoleFor(t, setup);
  const { page } = w;

  // The sign-in page: the organisation from the URL, the provider named.
  await page.goto(`${gateway}/console/?org=${org.id}`);
  await page.locator('#sso-start:focus').waitFor();
  t.is(await page.locator('#org').inputValue(), org.id);
  t.is(await text(page, '#sso-start'), `Sign in with ${new URL(provider.issuer).host}`);
  await accessible(t, page, 'sign-in page with single sign-on');

  // By name, typed: the same provider offered.
  await page.locator('#org').fill('ACME');
  await page.locator('#org').press('Enter');
  await page.locator('#sso-start:focus').waitFor();
  t.is(await page.locator('#sso-start').getAttribute('href'), '/v1/sso/start?org=ACME');
  await page.locator('#sso-start').click();
  await page.locator('h1:focus').waitFor();
  t.is(new URL(page.url()).pathname, '/console/');
  t.regex(await text(page, '.who'), /acme · ada@acme\.test · admin/);

  const cookie = (await sessionCookie(w))!;
  t.truthy(cookie, 'signed in by cookie');
  t.true(cookie.httpOnly);
  t.is(cookie.sameSite, 'Strict');
  t.is(cookie.path, '/v1');
  t.is(await page.evaluate<string>('document.cookie'), 'keyward_console_sso=1', 'the page sees only the marker, never the session');

  // The console's own calls carry X-Keyward-CSRF; a call with the cookie alone is refused.
  const seen: string[] = [];
  page.on('request', (r) => {
    if (new URL(r.url()).pathname.startsWith('/v1/')) seen.push(`${r.method()} ${new URL(r.url()).pathname} ${r.headers()['x-keyward-csrf'] ? 'csrf' : 'none'}`);
  });
  await openPage(page, 'Members');
  const adaRow = page.locator('tr[data-id^="usr_"]', { hasText: 'ada@acme.test' });
  await adaRow.waitFor();
  t.true(seen.includes('GET /v1/members csrf'), seen.join(', '));
  t.regex(await adaRow.innerText(), /ada@acme\.test[\s\S]*Ada Lovelace[\s\S]*admin[\s\S]*no budget/);
  t.is(await page.locator('tr[data-id^="usr_"]').count(), 2);
  await accessible(t, page, 'members page');
  const bare = await page.evaluate<[number, string]>(`fetch('/v1/members', { credentials: 'same-origin' }).then(async (r) => [r.status, (await r.json()).error.code])`);
  t.deepEqual(bare, [403, 'csrf_required']);

  // An admin sets a member's monthly budget.
  await page.getByRole('button', { name: 'Set budget of ada@acme.test' }).click();
  await page.locator('#member-budget_usd:focus').waitFor();
  await page.keyboard.type('25.50');
  await page.keyboard.press('Enter');
  await page.locator('p.ok[role="status"]', { hasText: 'ada@acme.test may spend $25.50 a month.' }).waitFor();
  await adaRow.filter({ hasText: '$25.50' }).waitFor();
  const listed = await api(app, 'GET', '/v1/members', { token: org.token });
  t.is(listed.body.data.find((m: { email: string }) => m.email === 'ada@acme.test').budget_usd, '25.50');
  t.true(seen.some((s) => s.startsWith('PATCH /v1/members/') && s.endsWith('csrf')));

  // An admin removes another member: its session ends at once.
  await page.getByRole('button', { name: 'Remove bob@acme.test' }).click();
  await page.getByRole('button', { name: 'Remove for good' }).click();
  await page.locator('p.ok[role="status"]', { hasText: 'Removed bob@acme.test.' }).waitFor();
  await page.locator('tr[data-id^="usr_"]', { hasText: 'bob@acme.test' }).waitFor({ state: 'detached' });
  t.is((await sessionCall(bob.browser, gateway, 'GET', '/v1/session')).status, 401);

  // Sign-out ends the session at the gateway, not only in this page.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('p.notice', { hasText: 'Signed out.' }).waitFor();
  t.true(seen.includes('DELETE /v1/session csrf'));
  t.is(await sessionCookie(w), undefined);
  const reused = await fetch(`${gateway}/v1/session`, { headers: { cookie: `keyward_session=${cookie.value}` } });
  t.is(reused.status, 401, 'the old cookie no longer works');
  await cleanRun(t, w);
});

test('refusals in the browser: a wrong state, a replayed code and a disallowed domain each come back to the sign-in page saying why', async (t) => {
  const setup = await ssoSetup(t);
  const { app, gateway, provider, org } = setup;
  const browser = await launchBrowser(t);
  const w = await consoleFor(t, setup, browser);
  const { page } = w;
  const refusal = page.locator('#sso-refused[role="alert"]');

  // A wrong `state`.
  const callback = await catchCallback(page, setup);
  const forged = new URL(callback);
  forged.searchParams.set('state', 'not-the-state');
  await page.goto(forged.href);
  await refusal.waitFor();
  t.regex(await refusal.innerText(), /`state` does not match/);
  t.is(new URL(page.url()).pathname, '/console/');
  t.is(await sessionCookie(w), undefined);

  // A code used once, then replayed with the same sign-in cookie: the provider refuses it.
  const fresh = await catchCallback(page, setup);
  const flow = (await w.context.cookies()).find((c) => c.name === 'keyward_sso')!;
  await page.goto(fresh);
  await page.locator('h1:focus').waitFor();
  t.truthy(await sessionCookie(w));
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('p.notice', { hasText: 'Signed out.' }).waitFor();
  await w.context.addCookies([flow]);
  await page.goto(fresh);
  await refusal.waitFor();
  t.regex(await refusal.innerText(), /refused the sign-in: invalid_grant/);
  t.is(await sessionCookie(w), undefined);

  await cleanRun(t, w);

  // An address at a domain the organisation does not allow (a new browser: the provider remembers who signed in).
  const other = await consoleFor(t, setup, browser);
  const outsider = other.page.locator('#sso-refused[role="alert"]');
  provider.nextPerson = { sub: 'eve', email: 'eve@evil.test', name: 'Eve', groups: ['admins'] };
  await signInBySso(other.page, setup);
  await outsider.waitFor();
  t.regex(await outsider.innerText(), /not at a domain this organisation allows/);
  t.is(await sessionCookie(other), undefined);
  await accessible(t, other.page, 'sign-in page with a refusal');
  // Read once: a reload no longer shows it.
  await other.page.goto(`${gateway}/console/`);
  await other.page.locator('#key:focus').waitFor();
  t.is(await outsider.count(), 0);
  const members = await api(app, 'GET', '/v1/members', { token: org.token });
  t.false(members.body.data.some((m: { email: string }) => m.email === 'eve@evil.test'));
  await cleanRun(t, other);
});

test('an expired session sends the console back to sign-in (the gateway\'s injected clock)', async (t) => {
  const clock = new ManualClock(Date.now());
  const setup = await ssoSetup(t, { clock });
  setup.provider.nextPerson = { sub: 'vic', email: 'vic@acme.test', name: 'Vic', groups: ['viewers'] };
  const w = await consoleFor(t, setup);
  const { page } = w;
  await signInBySso(page, setup);
  await page.locator('h1:focus').waitFor();
  t.regex(await text(page, '.who'), /vic@acme\.test · viewer/);
  await openPage(page, 'Members');
  t.is(await page.getByRole('button', { name: /Set budget/ }).count(), 0, 'a viewer reads only');
  t.is(await page.getByRole('button', { name: /^Remove/ }).count(), 0);

  clock.advance(12 * 3_600_000 + 1000);
  await page.getByRole('navigation').getByRole('link', { name: 'Teams', exact: true }).click();
  await page.locator('p.notice', { hasText: 'single sign-on session has ended' }).waitFor();
  await page.locator('#key').waitFor();
  // A reload finds no session either.
  await page.reload();
  await page.locator('#key:focus').waitFor();
  t.is(await page.evaluate<string>('document.cookie'), '');
  await cleanRun(t, w);
});
