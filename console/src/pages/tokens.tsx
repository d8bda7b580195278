/**
 * Proxy tokens: the list with status, scopes and usage (each listed token's usage is read from
 * GET /v1/tokens/:id, the one place the API gives it), minting with every scope the API takes
 * (ttl, models, paths, max_requests, rate_limit, budget_usd: an empty field is left out), the new
 * token's value shown once with a copy button, and revocation after confirmation.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api, Credential, ListOf, Token } from '../api.js';
import { ConfirmAction, CopyButton, ErrorLine, Section, shortTime, useLoad } from '../components.js';
import type { Abilities } from '../roles.js';

const listOfWords = (text: string): string[] => text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);

/** The mint body from the form: the scope fields filled in, numbers as numbers. */
export function mintBody(form: Record<string, string>): Record<string, unknown> {
  const body: Record<string, unknown> = { credential_id: form.credential_id?.trim() ?? '', ttl: form.ttl?.trim() ?? '' };
  if (form.models?.trim()) body.models = listOfWords(form.models);
  if (form.paths?.trim()) body.paths = listOfWords(form.paths);
  // Sent as typed when not a plain integer: the API's own message names what it takes.
  const integer = (v: string) => (/^\d+$/.test(v.trim()) ? Number(v.trim()) : v.trim());
  if (form.max_requests?.trim()) body.max_requests = integer(form.max_requests);
  if (form.rate_limit?.trim()) body.rate_limit = integer(form.rate_limit);
  if (form.budget_usd?.trim()) body.budget_usd = form.budget_usd.trim();
  return body;
}

function MintForm({ api, credentials, onMinted }: { api: Api; credentials: string[] | undefined; onMinted: (t: Token) => void }) {
  const [form, setForm] = useState<Record<string, string>>({ ttl: '1h', credential_id: credentials?.[0] ?? '' });
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const set = (name: string) => (e: Event) => setForm({ ...form, [name]: (e.target as HTMLInputElement).value });
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onMinted(await api.post<Token>('/v1/tokens', mintBody(form)));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const text = (name: string, label: string, help: string, placeholder = '') => (
    <div class="field">
      <label for={`mint-${name}`}>{label}</label>
      <input id={`mint-${name}`} name={name} value={form[name] ?? ''} placeholder={placeholder} onInput={set(name)} aria-describedby={`mint-${name}-help`} autocomplete="off" spellcheck={false} />
      <small id={`mint-${name}-help`}>{help}</small>
    </div>
  );
  return (
    <form onSubmit={submit} aria-label="Mint a proxy token" class="stack">
      <div class="field">
        <label for="mint-credential_id">Credential</label>
        {credentials && credentials.length > 0 ? (
          <select id="mint-credential_id" name="credential_id" value={form.credential_id} onChange={set('credential_id')}>
            {credentials.map((id) => <option value={id} key={id}>{id}</option>)}
          </select>
        ) : (
          <input id="mint-credential_id" name="credential_id" value={form.credential_id ?? ''} onInput={set('credential_id')} placeholder="cred_…" autocomplete="off" />
        )}
      </div>
      {text('ttl', 'Lifetime (ttl)', 'A number and one unit of s, m, h, d, e.g. 15m.')}
      {text('models', 'Models (optional)', 'Exact names or prefix*, separated by spaces or commas.', 'gpt-4o-mini claude-3-5-*')}
      {text('paths', 'Paths (optional)', 'Provider path patterns, separated by spaces or commas.', 'v1/chat/completions')}
      {text('max_requests', 'Max requests (optional)', 'Lifetime request cap.')}
      {text('rate_limit', 'Rate limit (optional)', 'Requests per minute.')}
      {text('budget_usd', 'Budget in USD (optional)', 'The token\'s lifetime spend cap, e.g. 5.00.')}
      <button type="submit" disabled={busy}>Mint token</button>
      <ErrorLine error={error} />
    </form>
  );
}

/** The value of a token just minted: shown here once, never again. */
function MintedToken({ token, onDismiss }: { token: Token; onDismiss: () => void }) {
  const value = useRef<HTMLInputElement>(null);
  useEffect(() => value.current?.focus(), [token.id]);
  return (
    <div class="minted">
      <p role="status"><strong>{token.id}</strong> minted. Copy its value now: it is not shown again.</p>
      <label for="minted-value">Token value</label>
      <input id="minted-value" ref={value} class="mono" readOnly value={token.token ?? ''} onFocus={(e) => (e.target as HTMLInputElement).select()} />
      <div class="row">
        <CopyButton value={token.token ?? ''} label="Copy token" />
        <button type="button" onClick={onDismiss}>Done</button>
      </div>
    </div>
  );
}

const scopesOf = (t: Token): string => [
  t.models ? `models: ${t.models.join(' ')}` : '',
  t.paths ? `paths: ${t.paths.join(' ')}` : '',
  t.max_requests !== undefined ? `max ${t.max_requests} requests` : '',
  t.rate_limit !== undefined ? `${t.rate_limit}/min` : '',
  t.budget_usd !== undefined ? `budget $${t.budget_usd}` : '',
].filter(Boolean).join('; ') || '—';

const usageOf = (t: Token): string => {
  if (!t.usage) return '…';
  const u = t.usage;
  return `${u.requests} req · ${u.input_tokens} in / ${u.output_tokens} out${u.spend_usd !== undefined ? ` · $${u.spend_usd}` : ''}`;
};

export function TokensPage({ api, can, credentialIds }: { api: Api; can: Abilities; credentialIds: string[] | undefined }) {
  const list = useLoad(async () => {
    const page = await api.get<ListOf<Token>>('/v1/tokens?limit=20');
    // Usage is on each token's own GET: read them side by side (a token gone meanwhile keeps its list row).
    const detailed = await Promise.all(page.data.map((t) => api.get<Token>(`/v1/tokens/${t.id}`).catch(() => t)));
    return { ...page, data: detailed };
  }, [api]);
  const credentials = useLoad(async () => (can.readAll ? (await api.get<ListOf<Credential>>('/v1/credentials?limit=100')).data.map((c) => c.id) : credentialIds), [api]);
  const [minted, setMinted] = useState<Token>();
  const [notice, setNotice] = useState<string>();

  return (
    <>
      {minted ? <MintedToken token={minted} onDismiss={() => setMinted(undefined)} /> : null}
      <Section title="Proxy tokens">
        <ErrorLine error={list.error} />
        {list.data && list.data.data.length === 0 ? <p>No tokens.</p> : null}
        {list.data && list.data.data.length > 0 ? (
          <div class="table-wrap">
            <table class="records">
              <thead><tr><th scope="col">Id</th><th scope="col">Status</th><th scope="col">Credential</th><th scope="col">Scopes</th><th scope="col">Usage</th><th scope="col">Expires</th>{can.revoke ? <th scope="col">Actions</th> : null}</tr></thead>
              <tbody>
                {list.data.data.map((t) => (
                  <tr key={t.id} data-id={t.id}>
                    <td data-label="Id" class="mono">{t.id}</td>
                    <td data-label="Status"><span class={`badge ${t.status}`}>{t.status}</span></td>
                    <td data-label="Credential" class="mono">{t.credential_id}</td>
                    <td data-label="Scopes">{scopesOf(t)}</td>
                    <td data-label="Usage" class="usage">{usageOf(t)}</td>
                    <td data-label="Expires">{shortTime(t.expires_at)}</td>
                    {can.revoke ? (
                      <td data-label="Actions" class="actions">
                        <ConfirmAction label="Revoke" name={t.id} question={`Revoke ${t.id}? Requests with it fail at once.`} confirmLabel="Revoke now" onConfirm={async () => {
                          await api.delete(`/v1/tokens/${t.id}`);
                          setNotice(`Revoked ${t.id}.`);
                          list.reload();
                        }} />
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
        {notice ? <p class="ok" role="status">{notice}</p> : null}
        <div class="row">
          <button type="button" onClick={list.reload}>Refresh</button>
          {list.data?.has_more ? <span class="note">Showing the newest 20.</span> : null}
        </div>
      </Section>
      {can.mint ? (
        <Section title="Mint a proxy token">
          <ErrorLine error={credentials.error} />
          {!credentials.loading ? <MintForm api={api} credentials={credentials.data} onMinted={(t) => {
            setMinted(t);
            list.reload();
          }} /> : null}
        </Section>
      ) : null}
    </>
  );
}
