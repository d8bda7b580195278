/**
 * Sign in with an organisation token or an admin key (`otok_…`). The key is checked against the
 * API (GET /v1/orgs/self, which also says the key's role) before the console opens; it is kept in
 * memory, and in this tab's sessionStorage only if asked. It never goes in the URL. A refusal shows
 * under the key field in plain words; the field's help says where a first-time operator gets a key.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Api, ApiFailure, type Caller } from '../api.js';
import { Field, valueOf } from '../components.js';
import { plainError } from '../errors.js';
import { WHERE_KEYS_COME_FROM } from '../explanations.js';

const KEY_FIELD = { name: 'key', label: 'Organisation token or admin key' };

function refusal(err: unknown): string {
  if (err instanceof ApiFailure && err.status === 401) return 'This key is not accepted: it may be mistyped, revoked, expired or replaced.';
  if (err instanceof ApiFailure && err.code === 'too_many_failures') return 'Too many failed sign-ins from here. Wait a minute and try again.';
  return plainError(err, [KEY_FIELD]).message;
}

export function SignIn({ onSignedIn, notice }: { onSignedIn: (key: string, caller: Caller, keep: boolean) => void; notice?: string | undefined }) {
  const [key, setKey] = useState('');
  const [keep, setKeep] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);

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
    </main>
  );
}
