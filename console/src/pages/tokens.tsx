/**
 * Proxy tokens: live ones with their name, status, credential (by name), limits and usage (each live
 * token's usage and caps are read from GET /v1/tokens/:id, the one place the API gives them), or the revoked ones
 * (GET /v1/tokens?status=revoked: who revoked each and when); a search by name; renaming; revocation
 * after confirmation; and minting (mint.tsx), the new token shown once with its SDK variables.
 */
import { useState } from 'preact/hooks';
import type { Api, Credential, ListOf, Provider, Token } from '../api.js';
import { ConfirmAction, ErrorLine, NameCell, NameSearch, RecordTable, Section, shortTime, useLoad, valueOf } from '../components.js';
import { count, credentialLabel, usdText } from '../format.js';
import type { Abilities } from '../roles.js';
import { MintedToken, MintForm } from './mint.js';
import { RenameForm } from './rename.js';

/**
 * A token's limits; a cap with a ledger (on the token's own GET: `caps`) as its refusals read it, used and
 * held (in flight, leased) of its limit, so the page never shows room a refused request did not have.
 */
const scopesOf = (t: Token): string => {
  const { budget_usd: budget, tokens_per_minute: tpm, max_requests: max } = t.caps ?? {};
  return [
    t.models ? `models ${t.models.join(' ')}` : '',
    t.paths ? `paths ${t.paths.join(' ')}` : '',
    max ? `requests ${count(max.used)} used, ${count(max.held)} held of ${count(max.limit)}` : t.max_requests !== undefined ? `at most ${count(t.max_requests)} requests` : '',
    t.rate_limit !== undefined ? `${count(t.rate_limit)} a minute` : '',
    budget ? `budget ${usdText(budget.used)} used, ${usdText(budget.held)} held of ${usdText(budget.limit)}` : t.budget_usd !== undefined ? `budget ${usdText(t.budget_usd)}` : '',
    tpm ? `tokens a minute ${count(tpm.used_in_window)} used, ${count(tpm.held)} held of ${count(tpm.limit)}`
      : t.tokens_per_minute !== undefined ? `${count(t.tokens_per_minute)} tokens a minute` : '',
    t.max_concurrent !== undefined ? `${count(t.max_concurrent)} at once` : '',
    t.tools !== undefined ? `tools ${t.tools.join(', ')}` : '',
  ].filter(Boolean).join('; ') || '—';
};

const usageOf = (t: Token): string => {
  if (!t.usage) return '…';
  const u = t.usage;
  return `${count(u.requests)} req · ${count(u.input_tokens)} in / ${count(u.output_tokens)} out${u.spend_usd !== undefined ? ` · $${u.spend_usd}` : ''}`;
};

/** Credentials and providers the token pages name things with (a minter reads neither list: ids stay ids). */
export function useNames(api: Api, can: Abilities) {
  const credentials = useLoad(async () => (can.readAll ? (await api.get<ListOf<Credential>>('/v1/credentials?limit=100')).data : undefined), [api]);
  const providers = useLoad(() => api.get<ListOf<Provider>>('/v1/providers').then((l) => l.data).catch(() => [] as Provider[]), [api]);
  return { credentials, providers };
}

export function TokensPage({ api, can, credentialIds }: { api: Api; can: Abilities; credentialIds: string[] | undefined }) {
  const [show, setShow] = useState<'live' | 'revoked'>('live');
  const [prefix, setPrefix] = useState('');
  const list = useLoad(async () => {
    const q = `limit=20${show === 'revoked' ? '&status=revoked' : ''}${prefix ? `&name=${encodeURIComponent(prefix)}` : ''}`;
    const page = await api.get<ListOf<Token>>(`/v1/tokens?${q}`);
    if (show === 'revoked') return page;
    // Usage is on each token's own GET: read them side by side (a token gone meanwhile keeps its list row).
    return { ...page, data: await Promise.all(page.data.map((t) => api.get<Token>(`/v1/tokens/${t.id}`).catch(() => t))) };
  }, [api, show, prefix]);
  const { credentials, providers } = useNames(api, can);
  const [minted, setMinted] = useState<Token>();
  const [renaming, setRenaming] = useState<Token>();
  const [notice, setNotice] = useState<string>();
  const credentialOf = (id: string) => credentials.data?.find((c) => c.id === id);
  const credentialText = (id: string) => {
    const c = credentialOf(id);
    return c ? credentialLabel(c, providers.data) : id;
  };
  const tokenLabel = (t: Token) => (t.name ? `"${t.name}"` : `token ${t.id}`);
  const revoked = show === 'revoked';

  return (
    <>
      {minted ? <MintedToken token={minted} credential={credentialOf(minted.credential_id)} providers={providers.data ?? []} onDismiss={() => setMinted(undefined)} /> : null}
      <Section title={revoked ? 'Revoked tokens' : 'Proxy tokens'}>
        <div class="row filters">
          <label for="tokens-show">Show</label>
          <select id="tokens-show" value={show} onChange={(e) => setShow(valueOf(e) as 'live' | 'revoked')}>
            <option value="live">Live tokens</option>
            <option value="revoked">Revoked tokens</option>
          </select>
        </div>
        <NameSearch id="tokens-search" value={prefix} onSearch={setPrefix} what="tokens" />
        <ErrorLine error={list.error} />
        {list.data && list.data.data.length === 0 ? <p>{prefix ? 'No token has a name starting with that.' : revoked ? 'No revoked tokens.' : 'No tokens yet.'}</p> : null}
        {list.data && list.data.data.length > 0 ? (
          <RecordTable rows={list.data.data} attrs={(t) => ({ 'data-id': t.id })} columns={[
            { label: 'Name', cell: (t) => <NameCell name={t.name} id={t.id} /> },
            { label: 'Status', cell: (t) => <span class={`badge ${t.status}`}>{t.status}</span> },
            { label: 'Credential', cell: (t) => credentialText(t.credential_id) },
            { label: 'Limits', cell: scopesOf },
            ...(revoked ? [
              { label: 'Revoked', cell: (t: Token) => (t.revoked_at ? shortTime(t.revoked_at) : '—') },
              { label: 'By', cls: 'mono', cell: (t: Token) => t.revoked_by ?? '—' },
            ] : [
              { label: 'Usage', cls: 'usage', cell: usageOf },
              { label: 'Expires', cell: (t: Token) => shortTime(t.expires_at) },
            ]),
            can.revoke && !revoked && { label: 'Actions', cls: 'actions', cell: (t) => (
              <>
                <button type="button" aria-label={`Rename ${tokenLabel(t)}`} aria-expanded={renaming?.id === t.id} onClick={() => setRenaming(renaming?.id === t.id ? undefined : t)}>Rename</button>
                <ConfirmAction label="Revoke" name={tokenLabel(t)} question="Revoke it? Requests with it fail at once." confirmLabel="Revoke now" onConfirm={async () => {
                  await api.delete(`/v1/tokens/${t.id}`);
                  setNotice(`Revoked ${tokenLabel(t)}. It is listed under Revoked tokens.`);
                  list.reload();
                }} />
              </>
            ) },
          ]} />
        ) : null}
        {renaming ? (
          <RenameForm api={api} path={`/v1/tokens/${renaming.id}`} what={tokenLabel(renaming)} current={renaming.name} onCancel={() => setRenaming(undefined)}
            onDone={(notice) => {
              setNotice(notice);
              setRenaming(undefined);
              list.reload();
            }} />
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
          {credentials.data?.length === 0 ? (
            <p data-empty="credentials">No provider key is stored yet: a token needs one. <a href="#/start">Get started</a> or <a href="#/credentials">store a key</a>.</p>
          ) : null}
          {!credentials.loading && !providers.loading && credentials.data?.length !== 0 ? (
            <MintForm api={api} credentials={credentials.data} minterIds={credentialIds} providers={providers.data ?? []} onMinted={(t) => {
              setMinted(t);
              if (!revoked) list.reload();
            }} />
          ) : null}
        </Section>
      ) : null}
    </>
  );
}
