/**
 * Sign in with an organisation token or an admin key (`otok_…`). The key is checked against the
 * API (GET /v1/orgs/self, which also says the key's role) before the console opens; it is kept in
 * memory, and in this tab's sessionStorage only if asked. It never goes in the URL.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Api, type Caller } from '../api.js';
import { ErrorLine } from '../components.js';

export function SignIn({ onSignedIn, notice }: { onSignedIn: (key: string, caller: Caller, keep: boolean) => void; notice?: string }) {
  const [key, setKey] = useState('');
  const [keep, setKeep] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);

  const submit = async (e: Event) => {
    e.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) {
      setError(new Error('Enter an organisation token or admin key (otok_…).'));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const caller = await new Api(trimmed).whoami();
      setKey('');
      onSignedIn(trimmed, caller, keep);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin" id="main">
      <h1>Keyward console</h1>
      {notice ? <p class="notice" role="status">{notice}</p> : null}
      <form onSubmit={submit} class="card" aria-label="Sign in">
        <label for="key">Organisation token or admin key</label>
        <input id="key" ref={input} type="password" autocomplete="off" spellcheck={false} placeholder="otok_…"
          value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        <label class="check">
          <input type="checkbox" checked={keep} onChange={(e) => setKeep((e.target as HTMLInputElement).checked)} />
          Stay signed in in this tab (session storage; closing the tab forgets the key)
        </label>
        <button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
        <ErrorLine error={error} />
      </form>
      <p class="note">The key is sent only to this gateway's admin API, as a Bearer token.</p>
    </main>
  );
}
