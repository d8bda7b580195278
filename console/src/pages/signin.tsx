/**
 * Sign in with an organisation token or an admin key (`otok_…`), or with the organisation's single
 * sign-on. The key is checked against the API (GET /v1/orgs/self, which also says the key's role)
 * before the console opens; it is kept in memory, and in this tab's sessionStorage only if asked. It
 * never goes in the URL. A refusal shows under the key field in plain words; the field's help says
 * where a first-time operator gets a key. Single sign-on asks for the organisation (its name or id,
 * prefilled from `/console/?org=`), asks the gateway whether it signs in that way (GET
 * /v1/sso/provider), then offers "Sign in with <provider>", a plain link to GET /v1/sso/start; the
 * provider sends the browser back to the console signed in by cookie, or with why it was refused.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Api, ApiFailure, type Caller } from '../api.js';
import { Field, valueOf } from '../components.js';
import { plainError } from '../errors.js';
import { WHERE_KEYS_COME_FROM } from '../explanations.js';
import { orgFromUrl } from '../sso.js';

const KEY_FIELD = { name: 'key', label: 'Organisation token or admin key' };

function refusal(err: unknown): string {
  if (err instanceof ApiFailure && err.status === 401) return 'This key is not accepted: it may be mistyped, revoked, expired or replaced.';
  if (err instanceof ApiFailure && err.code === 'too_many_failures') return 'Too many failed sign-ins from here. Wait a minute and try again.';
  return plainError(err, [KEY_FIELD]).message;
}

/** Single sign-on: the organisation, then "Sign in with <provider>" (a link: the browser goes to the provider and back). */
function SingleSignOn({ refused }: { refused?: string | undefined }) {
  const [org, setOrg] = useState(orgFromUrl);
  const [provider, setProvider] = useState<{ org: string; name: string }>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const input = useRef<HTMLInputElement>(null);
  const start = useRef<HTMLAnchorElement>(null);

  const lookUp = async (wanted: string, focus: boolean) => {
    setBusy(true);
    setError(undefined);
    setProvider(undefined);
    try {
      const found = await Api.ssoProvider(wanted);
      if (!found) {
        setError('This organisation does not sign in by single sign-on here, or no organisation has that name or id. Check it, or sign in with a key above.');
        if (focus) input.current?.focus();
        return;
      }
      setProvider({ org: wanted, name: found.provider });
      if (focus) requestAnimationFrame(() => start.current?.focus());
    } catch (err) {
      setError(plainError(err, [ORG_FIELD]).message);
      if (focus) input.current?.focus();
    } finally {
      setBusy(false);
    }
  };
  // `/console/?org=…`: the organisation is known; the provider is looked up at once.
  useEffect(() => {
    if (org) void lookUp(org, !refused);
    else if (refused) input.current?.focus();
  }, []);

  return (
    <section class="card stack" aria-labelledby="sso-title">
      <h2 id="sso-title">Single sign-on</h2>
      {refused ? <p class="error" role="alert" id="sso-refused">The sign-in was refused: {refused}</p> : null}
      <form onSubmit={(e) => {
        e.preventDefault();
        const wanted = org.trim();
        if (!wanted) {
          setError('Enter your organisation\'s name or id (org_…).');
          input.current?.focus();
          return;
        }
        void lookUp(wanted, true);
      }} aria-label="Find your organisation" noValidate>
        <Field id="org" label={ORG_FIELD.label} help="Its name or id (org_…), as whoever runs Keyward gave it." error={error}>
          {(p) => <input {...p} ref={input} autocomplete="organization" spellcheck={false} value={org} maxLength={100} onInput={(e) => setOrg(valueOf(e))} />}
        </Field>
        <button type="submit" disabled={busy}>{busy ? 'Looking it up…' : 'Continue'}</button>
      </form>
      {provider ? <a class="sso" id="sso-start" ref={start} href={`/v1/sso/start?org=${encodeURIComponent(provider.org)}`}>Sign in with {provider.name}</a> : null}
    </section>
  );
}

const ORG_FIELD = { name: 'org', label: 'Organisation' };

export function SignIn({ onSignedIn, notice, refused }: { onSignedIn: (key: string, caller: Caller, keep: boolean) => void; notice?: string | undefined; refused?: string | undefined }) {
  const [key, setKey] = useState('');
  const [keep, setKeep] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const input = useRef<HTMLInputElement>(null);
  // The key field has the focus, unless the page came for single sign-on (an organisation in the URL, or a refusal to read).
  useEffect(() => {
    if (!orgFromUrl() && !refused) input.current?.focus();
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) {
      setError('Enter an organisation token or admin key: it starts with otok_.');
      input.current?.focus();
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const caller = await new Api(trimmed).whoami();
      setKey('');
      onSignedIn(trimmed, caller, keep);
    } catch (err) {
      setError(refusal(err));
      input.current?.focus();
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin" id="main">
      <h1>Keyward console</h1>
      {notice ? <p class="notice" role="status">{notice}</p> : null}
      <form onSubmit={submit} class="card stack" aria-label="Sign in" noValidate>
        <Field id="key" label={KEY_FIELD.label} help={WHERE_KEYS_COME_FROM} error={error}>
          {(p) => <input {...p} ref={input} type="password" autocomplete="off" spellcheck={false} placeholder="otok_…" value={key} onInput={(e) => setKey(valueOf(e))} />}
        </Field>
        <label class="check">
          <input type="checkbox" checked={keep} onChange={(e) => setKeep(e.currentTarget.checked)} />
          Keep me signed in while this tab is open (closing the tab forgets the key)
        </label>
        <button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
      <p class="note">The key is sent only to this gateway's admin API, as a Bearer token.</p>
      <SingleSignOn refused={refused} />
    </main>
  );
}
