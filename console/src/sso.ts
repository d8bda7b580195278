/**
 * What the console may know of a single sign-on session: the session itself is an HttpOnly cookie the page
 * never sees; the gateway sets two readable ones beside it on /console. `keyward_console_sso` says a session
 * cookie exists (so GET /v1/session is asked only then), `keyward_sign_in_error` why the last sign-in at the
 * provider was refused (the gateway's own words: no link can set it). Both are cleared once read or signed out.
 */
const MARKER = 'keyward_console_sso';
const ERROR = 'keyward_sign_in_error';

function readCookie(name: string): string | undefined {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

const clear = (name: string) => {
  document.cookie = `${name}=; Path=/console; Max-Age=0; SameSite=Lax`;
};

export const hasSsoSession = (): boolean => readCookie(MARKER) === '1';

export const forgetSsoSession = (): void => clear(MARKER);

/** The refusal of the sign-in that just came back, once. */
export function takeSignInError(): string | undefined {
  const raw = readCookie(ERROR);
  if (raw === undefined) return undefined;
  clear(ERROR);
  try {
    return decodeURIComponent(raw).slice(0, 300) || undefined;
  } catch {
    return undefined;
  }
}

/** `/console/?org=<id>`: the organisation to sign in to, prefilled. */
export function orgFromUrl(): string {
  return new URLSearchParams(location.search).get('org')?.slice(0, 100) ?? '';
}
