/**
 * Credentials: the stored keys by name (never a key: its provider, hint and plain fields, each under
 * its label), a search by name, renaming, rotating the secret fields, deletion after confirmation, and
 * the form to store a key for any loaded provider (credential-form.tsx).
 */
import { useState } from 'preact/hooks';
import type { Api, Credential, ListOf, Provider } from '../api.js';
import { ConfirmAction, ErrorLine, NameCell, NameSearch, RecordTable, Section, shortTime, useLoad } from '../components.js';
import { credentialLabel } from '../format.js';
import type { Abilities } from '../roles.js';
import { CreateCredential, formField, RotateForm } from './credential-form.js';
import { RenameForm } from './rename.js';
import { ConnectionCell, isOAuth, oauthFields, takeConnectOutcome } from './oauth-connect.js';

const VIEW_KEYS = new Set(['id', 'object', 'provider', 'name', 'key_hint', 'created_at', 'updated_at', 'usage']);

/** The plain fields of a credential, each under its provider's label: "AWS region: eu-west-1". */
function plainFields(c: Credential, provider: Provider | undefined): string {
  if (isOAuth(c)) return oauthFields(c);
  const label = (name: string) => {
    const f = provider?.credential_fields.find((x) => x.name === name);
    return f ? formField(f).label : name;
  };
  return Object.entries(c).filter(([k]) => !VIEW_KEYS.has(k)).map(([k, v]) => `${label(k)}: ${String(v)}`).join(', ') || '—';
}

export function CredentialsPage({ api, can }: { api: Api; can: Abilities }) {
  const [prefix, setPrefix] = useState('');
  const providers = useLoad(() => api.get<ListOf<Provider>>('/v1/providers').then((l) => l.data), [api]);
  const list = useLoad(() => api.get<ListOf<Credential>>(`/v1/credentials?limit=100${prefix ? `&name=${encodeURIComponent(prefix)}` : ''}`), [api, prefix]);
  const [open, setOpen] = useState<{ id: string; what: 'rotate' | 'rename' }>();
  const [notice, setNotice] = useState<string | undefined>(takeConnectOutcome);
  const all = providers.data ?? [];
  const providerOf = (c: Credential) => all.find((p) => p.id === c.provider);
  const current = open ? list.data?.data.find((c) => c.id === open.id) : undefined;

  return (
    <>
      <Section title="Stored keys">
        <NameSearch id="credentials-search" value={prefix} onSearch={setPrefix} what="keys" />
        <ErrorLine error={list.error} />
        {list.data && list.data.data.length === 0 ? <p>{prefix ? 'No key has a name starting with that.' : 'No keys yet. Store one below: tokens are minted for it.'}</p> : null}
        {list.data && list.data.data.length > 0 ? (
          <RecordTable rows={list.data.data} attrs={(c) => ({ 'data-id': c.id })} columns={[
            { label: 'Name', cell: (c) => <NameCell name={c.name} id={c.id} /> },
            { label: 'Provider', cell: (c) => providerOf(c)?.name ?? c.provider },
            { label: 'Key', cls: 'mono', cell: (c) => c.key_hint },
            { label: 'Fields', cell: (c) => plainFields(c, providerOf(c)) },
            // An upstream OAuth credential's account: its state, and Connect or Reconnect (each member their own, for a per-member one).
            list.data.data.some(isOAuth) && { label: 'Account', cell: (c) => (isOAuth(c) ? <ConnectionCell api={api} credential={c} label={credentialLabel(c, all)} /> : '—') },
            { label: 'Updated', cell: (c) => shortTime(c.updated_at) },
            can.manageCredentials && { label: 'Actions', cls: 'actions', cell: (c) => {
              const label = credentialLabel(c, all);
              const toggle = (what: 'rotate' | 'rename') => setOpen(open?.id === c.id && open.what === what ? undefined : { id: c.id, what });
              return (
                <>
                  <button type="button" aria-expanded={open?.id === c.id && open.what === 'rename'} aria-label={`Rename ${label}`} onClick={() => toggle('rename')}>Rename</button>
                  <button type="button" aria-expanded={open?.id === c.id && open.what === 'rotate'} aria-label={`Rotate ${label}`} onClick={() => toggle('rotate')}>Rotate</button>
                  <ConfirmAction label="Delete" name={label} question="Delete this key and every token that uses it?" confirmLabel="Delete for good" onConfirm={async () => {
                    await api.delete(`/v1/credentials/${c.id}`);
                    setNotice(`Deleted ${label}.`);
                    list.reload();
                  }} />
                </>
              );
            } },
          ]} />
        ) : null}
        {current && open?.what === 'rotate' ? (
          <RotateForm api={api} credential={current} label={credentialLabel(current, all)} provider={providerOf(current)} onCancel={() => setOpen(undefined)}
            onDone={() => {
              setNotice(`Rotated ${credentialLabel(current, all)}.`);
              setOpen(undefined);
              list.reload();
            }} />
        ) : null}
        {current && open?.what === 'rename' ? (
          <RenameForm api={api} path={`/v1/credentials/${current.id}`} what={credentialLabel(current, all)} current={current.name} onCancel={() => setOpen(undefined)}
            onDone={(notice) => {
              setNotice(notice);
              setOpen(undefined);
              list.reload();
            }} />
        ) : null}
        {notice ? <p class="ok" role="status">{notice}</p> : null}
        {list.data?.has_more ? <p class="note">Showing the newest 100.</p> : null}
      </Section>
      {can.manageCredentials ? (
        <Section title="Store a provider key">
          <ErrorLine error={providers.error} />
          {providers.data ? <CreateCredential api={api} providers={providers.data} onCreated={() => list.reload()} /> : null}
        </Section>
      ) : null}
    </>
  );
}
