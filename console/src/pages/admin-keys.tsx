/**
 * Admin keys (owners and admins): keys for a team member or a CI job with a role (admin, minter,
 * viewer), a minter optionally limited to some credentials (picked by name), an optional lifetime and
 * a name. The new key is shown once with a copy button; the list names each key, its role, what it may
 * mint for and when it ends; keys are renamed or revoked (after confirmation) from it.
 */
import { useState } from 'preact/hooks';
import type { AdminKey, Api, Credential, ListOf, Provider } from '../api.js';
import { ConfirmAction, ErrorLine, Field, FormError, NameCell, NameSearch, RecordTable, Section, ShownOnce, shortTime, useFormState, useLoad, valueOf } from '../components.js';
import { credentialLabel } from '../format.js';
import { RenameForm } from './rename.js';

const ROLES = [
  { id: 'viewer', label: 'Viewer', help: 'reads everything, changes nothing' },
  { id: 'minter', label: 'Minter', help: 'only mints tokens (for the credentials picked below, or all) and sees its own' },
  { id: 'admin', label: 'Admin', help: 'everything but rotating the organisation token' },
] as const;

const FIELDS = [
  { name: 'name', label: 'Name', help: 'Who or what uses the key, such as ci deploy job.' },
  { name: 'role', label: 'Role' },
  { name: 'credential_ids', label: 'Credentials it may mint for' },
  { name: 'ttl', label: 'Lifetime', help: 'A number and a unit: s, m, h or d, at most 366d. Leave empty for a key that lasts until revoked.' },
];

function CreateAdminKey({ api, credentials, providers, onCreated }: { api: Api; credentials: Credential[]; providers: Provider[]; onCreated: (k: AdminKey) => void }) {
  const [name, setName] = useState('');
  const [role, setRole] = useState<AdminKey['role']>('viewer');
  const [picked, setPicked] = useState<string[]>([]);
  const [ttl, setTtl] = useState('');
  const form = useFormState('akey', FIELDS);
  const submit = (e: Event) => {
    e.preventDefault();
    void form.submit(async () => {
      onCreated(await api.post<AdminKey>('/v1/admin-keys', {
        role, ...(name.trim() ? { name: name.trim() } : {}), ...(ttl.trim() ? { ttl: ttl.trim() } : {}),
        ...(role === 'minter' && picked.length > 0 ? { credential_ids: picked } : {}),
      }));
      setName('');
      setTtl('');
      setPicked([]);
    });
  };
  return (
    <form class="stack" aria-label="Create an admin key" noValidate onSubmit={submit}>
      <Field id="akey-name" label="Name" help={FIELDS[0]!.help} optional error={form.errorOf('name')}>
        {(p) => <input {...p} value={name} maxLength={64} autocomplete="off" onInput={(e) => setName(valueOf(e))} />}
      </Field>
      <fieldset class="stack" aria-describedby={form.errorOf('role') ? 'akey-role-error' : undefined}>
        <legend>Role</legend>
        {ROLES.map((r) => (
          <label class="check" key={r.id}>
            <input type="radio" name="role" value={r.id} checked={role === r.id} onChange={() => setRole(r.id)} />
            <span><strong>{r.label}</strong>: {r.help}</span>
          </label>
        ))}
        {form.errorOf('role') ? <p class="field-error" id="akey-role-error">{form.errorOf('role')}</p> : null}
      </fieldset>
      {role === 'minter' ? (
        <fieldset class="stack" id="akey-credential_ids" tabIndex={-1} aria-invalid={form.errorOf('credential_ids') ? 'true' : undefined}
          aria-describedby={form.errorOf('credential_ids') ? 'akey-credential_ids-error' : undefined}>
          <legend>Credentials it may mint for <span class="optional">(none picked: all of them)</span></legend>
          {credentials.map((c) => (
            <label class="check" key={c.id}>
              <input type="checkbox" checked={picked.includes(c.id)} onChange={(e) => setPicked(e.currentTarget.checked ? [...picked, c.id] : picked.filter((x) => x !== c.id))} />
              {credentialLabel(c, providers)}
            </label>
          ))}
          {form.errorOf('credential_ids') ? <p class="field-error" id="akey-credential_ids-error">{form.errorOf('credential_ids')}</p> : null}
        </fieldset>
      ) : null}
      <Field id="akey-ttl" label="Lifetime" help={FIELDS[3]!.help} optional error={form.errorOf('ttl')}>
        {(p) => <input {...p} class="short" value={ttl} placeholder="90d" autocomplete="off" onInput={(e) => setTtl(valueOf(e))} />}
      </Field>
      <button type="submit" disabled={form.busy}>Create key</button>
      <FormError state={form} />
    </form>
  );
}

export function AdminKeysPage({ api }: { api: Api }) {
  const [prefix, setPrefix] = useState('');
  const list = useLoad(() => api.get<ListOf<AdminKey>>(`/v1/admin-keys?limit=100${prefix ? `&name=${encodeURIComponent(prefix)}` : ''}`), [api, prefix]);
  const credentials = useLoad(() => api.get<ListOf<Credential>>('/v1/credentials?limit=100').then((l) => l.data), [api]);
  const providers = useLoad(() => api.get<ListOf<Provider>>('/v1/providers').then((l) => l.data), [api]);
  const [created, setCreated] = useState<AdminKey>();
  const [renaming, setRenaming] = useState<AdminKey>();
  const [notice, setNotice] = useState<string>();
  const label = (k: AdminKey) => (k.name ? `"${k.name}"` : `key ${k.id}`);
  const credentialText = (id: string) => {
    const c = credentials.data?.find((x) => x.id === id);
    return c ? credentialLabel(c, providers.data ?? []) : id;
  };

  return (
    <>
      {created ? (
        <div class="minted" data-id={created.id}>
          <p role="status"><strong>{created.name ? `"${created.name}"` : 'The key'} is ready</strong> ({created.role}). Copy it now: it is not shown again.</p>
          <ShownOnce id="akey-value" label="Admin key" value={created.token ?? ''} copyLabel="Copy key" />
          <p class="note">It signs in here and calls the admin API as <code>Authorization: Bearer</code>, like the organisation token, with its role's rights.</p>
          <div class="row"><button type="button" onClick={() => setCreated(undefined)}>Done</button></div>
        </div>
      ) : null}
      <Section title="Keys">
        <NameSearch id="akeys-search" value={prefix} onSearch={setPrefix} what="admin keys" />
        <ErrorLine error={list.error} />
        {list.data && list.data.data.length === 0 ? <p>{prefix ? 'No key has a name starting with that.' : 'No admin keys yet.'}</p> : null}
        {list.data && list.data.data.length > 0 ? (
          <RecordTable rows={list.data.data} attrs={(k) => ({ 'data-id': k.id })} columns={[
            { label: 'Name', cell: (k) => <NameCell name={k.name} id={k.id} /> },
            { label: 'Role', cell: (k) => k.role },
            { label: 'May mint for', cell: (k) => (k.role !== 'minter' ? '—' : k.credential_ids ? k.credential_ids.map(credentialText).join('; ') : 'every credential') },
            { label: 'Status', cell: (k) => <span class={`badge ${k.status}`}>{k.status}</span> },
            { label: 'Expires', cell: (k) => (k.expires_at ? shortTime(k.expires_at) : 'never') },
            { label: 'Actions', cls: 'actions', cell: (k) => (
              <>
                <button type="button" aria-label={`Rename ${label(k)}`} onClick={() => setRenaming(renaming?.id === k.id ? undefined : k)}>Rename</button>
                <ConfirmAction label="Revoke" name={label(k)} question="Revoke this key? It stops working at once." confirmLabel="Revoke now" onConfirm={async () => {
                  await api.delete(`/v1/admin-keys/${k.id}`);
                  setNotice(`Revoked ${label(k)}.`);
                  list.reload();
                }} />
              </>
            ) },
          ]} />
        ) : null}
        {renaming ? (
          <RenameForm api={api} path={`/v1/admin-keys/${renaming.id}`} what={label(renaming)} current={renaming.name} onCancel={() => setRenaming(undefined)}
            onDone={(notice) => {
              setNotice(notice);
              setRenaming(undefined);
              list.reload();
            }} />
        ) : null}
        {notice ? <p class="ok" role="status">{notice}</p> : null}
      </Section>
      <Section title="Create an admin key">
        <ErrorLine error={credentials.error} />
        {credentials.data && providers.data ? <CreateAdminKey api={api} credentials={credentials.data} providers={providers.data} onCreated={(k) => {
          setCreated(k);
          list.reload();
        }} /> : null}
      </Section>
    </>
  );
}
