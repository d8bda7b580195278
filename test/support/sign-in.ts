/**
 * Test support: a browser without a browser for single sign-on. `Browser` follows redirects by hand and
 * keeps cookies per origin (what a browser sends back is what this jar holds), so a test can run the
 * console's sign-in through a real provider, stop at the callback, replay it, or swap its cookie.
 */
export class Browser {
  private readonly jars = new Map<string, Map<string, string>>();

  cookies(url: string): Map<string, string> {
    const origin = new URL(url).origin;
    let jar = this.jars.get(origin);
    if (!jar) this.jars.set(origin, (jar = new Map()));
    return jar;
  }

  /** One request with this origin's cookies; Set-Cookie kept. No redirect followed. */
  async request(url: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Response> {
    const jar = this.cookies(url);
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, { method: init.method ?? 'GET', redirect: 'manual', headers: { ...(cookie ? { cookie } : {}), ...init.headers }, ...(init.body !== undefined ? { body: init.body } : {}) });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const gone = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '';
      if (gone) jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  }

  /** Follows redirects from `url` until one leads to `stopAt` (a prefix), which is returned unvisited; or the final response. */
  async follow(url: string, stopAt?: string): Promise<{ url: string; response?: Response }> {
    let current = url;
    for (let i = 0; i < 20; i++) {
      if (stopAt && current.startsWith(stopAt)) return { url: current };
      const res = await this.request(current);
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !location) return { url: current, response: res };
      await res.body?.cancel();
      current = new URL(location, current).href;
    }
    throw new Error('too many redirects');
  }
}

export interface SignedIn {
  browser: Browser;
  /** The session cookie's value. */
  session: string;
  /** The callback URL the provider sent the browser to (code and state). */
  callback: string;
  /** The callback's response. */
  response: Response;
}

/** The console's whole sign-in at `gateway` (its public URL) for `org`, with the provider's next person. */
export async function signIn(gateway: string, org: string, browser = new Browser()): Promise<SignedIn> {
  const callbackPrefix = `${gateway}/v1/sso/callback`;
  const { url: callback } = await browser.follow(`${gateway}/v1/sso/start?org=${org}`, callbackPrefix);
  if (!callback.startsWith(callbackPrefix)) throw new Error(`the sign-in did not come back: ${callback}`);
  const response = await browser.request(callback);
  return { browser, session: browser.cookies(gateway).get('keyward_session') ?? '', callback, response };
}

/** GET /v1/session with the cookie, then an admin call with its CSRF value. */
export async function sessionCall(browser: Browser, gateway: string, method: string, path: string, options: { csrf?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const res = await browser.request(`${gateway}${path}`, {
    method,
    headers: { ...(options.csrf !== undefined ? { 'x-keyward-csrf': options.csrf } : {}), ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A device sign-in approved at the provider by its person: each form the provider shows (the auto-submitted one, the confirmation) submitted, redirects followed. */
export async function approveDevice(browser: Browser, verificationUriComplete: string): Promise<{ status: number; html: string }> {
  let page = await browser.follow(verificationUriComplete);
  for (let i = 0; i < 6; i++) {
    const html = await page.response!.text();
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
    if (!form || page.response!.status !== 200) return { status: page.response!.status, html };
    const fields = new URLSearchParams();
    for (const m of form[2]!.matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
      const name = /name="([^"]+)"/.exec(m[0])?.[1];
      const value = /value="([^"]*)"/.exec(m[0])?.[1] ?? '';
      if (name) fields.set(name, value);
    }
    const action = new URL(form[1]!, page.url).href;
    const posted = await browser.request(action, { method: 'POST', body: fields.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const location = posted.headers.get('location');
    page = location ? await browser.follow(new URL(location, action).href) : { url: action, response: posted };
  }
  throw new Error('the device sign-in never finished');
}
