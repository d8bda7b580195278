/**
 * Upstream OAuth credentials in the console: each one's account state (Connected, Not connected, Reconnect)
 * with the button that connects it, and the callback page the SaaS sends the browser back to
 * (`/console/oauth-callback`). Connecting keeps the start's `binding` in this tab's sessionStorage only
 * until the callback page has posted it with the code (POST /v1/oauth/callback needs no key: the binding
 * and the encrypted state are the proof), then goes back to Credentials with what happened.
 */
import { useState } from 'preact/hooks';
import { ApiFailure, type Api, type Credential } from '../api.js';

const BINDING = 'keyward.oauth.binding';
const OUTCOME = 'keyward.oauth.outcome';
export const CALLBACK_PATH = '/console/oauth-callback';

interface Connection {
  state: 'not_connected' | 'connected' | 'reconnect';
  members?: { connected: number; reconnect: number };
}

export const isOAuth = (c: Credential): boolean => c.kind === 'oauth';

/** "OAuth app <client id>, scopes …, per member": an OAuth credential's settings in a line. */
export function oauthFields(c: Credential): string {
  const scopes = Array.isArray(c.scopes) && c.scopes.length > 0 ? `, scopes ${c.scopes.join(' ')}` : '';
  return `OAuth app ${String(c.client_id)}${scopes}${c.per_member ? ', each member\'s own account' : ''}`;
}

const STATE_WORDS: Record<Connection['state'], string> = { connected: 'Connected', not_connected: 'Not connected', reconnect: 'Reconnect' };

/** The account's state and the Connect (or Reconnect) button. */
export function ConnectionCell({ api, credential, label }: { api: Api; credential: Credential; label: string }) {
  const [error, setError] = useState<string>();
  const connection = (credential.connection ?? { state: 'not_connected' }) as Connection;
  const connect = async () => {
    setError(undefined);
    try {
      const started = await api.post<{ authorization_url: string; binding: string }>(`/v1/credentials/${credential.id}/connect`, {});
      sessionStorage.setItem(BINDING, started.binding);
      location.assign(started.authorization_url);
    } catch (err) {
      setError(err instanceof ApiFailure ? err.message : 'The connection could not be started.');
    }
  };
  const members = connection.members ? ` (${connection.members.connected} connected, ${connection.members.reconnect} to reconnect)` : '';
  const action = connection.state === 'reconnect' ? 'Reconnect' : connection.state === 'connected' ? 'Connect again' : 'Connect';
  return (
    <>
      <span class={`connection ${connection.state}`} data-state={connection.state}>{STATE_WORDS[connection.state]}{members}</span>{' '}
      <button type="button" aria-label={`${action} ${label}`} onClick={connect}>{action}</button>
      {error ? <span class="error" role="alert"> {error}</span> : null}
    </>
  );
}

/** What the last connect came to (shown once on Credentials). */
export function takeConnectOutcome(): string | undefined {
  try {
    const outcome = sessionStorage.getItem(OUTCOME) ?? undefined;
    sessionStorage.removeItem(OUTCOME);
    return outcome;
  } catch {
    return undefined;
  }
}

/** On the callback page: posts what the SaaS sent with this tab's binding, then opens Credentials. */
export async function finishConnect(): Promise<void> {
  const q = new URLSearchParams(location.search);
  const binding = sessionStorage.getItem(BINDING) ?? '';
  sessionStorage.removeItem(BINDING);
  let outcome: string;
  try {
    const body: Record<string, string> = { state: q.get('state') ?? '', binding };
    for (const k of ['code', 'error', 'error_description']) if (q.get(k) !== null) body[k] = q.get(k)!;
    const res = await fetch('/v1/oauth/callback', {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body),
      cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer', redirect: 'error',
    });
    const parsed = await res.json().catch(() => undefined) as { name?: string; id?: string; error?: { message?: string } } | undefined;
    outcome = res.ok ? `Connected ${parsed?.name ?? parsed?.id ?? 'the account'}.` : `Not connected: ${parsed?.error?.message ?? `the gateway answered ${res.status}`}`;
  } catch {
    outcome = 'Not connected: the gateway could not be reached.';
  }
  sessionStorage.setItem(OUTCOME, outcome);
  // The code and state leave the address bar and the history.
  location.replace('/console/#/credentials');
}
