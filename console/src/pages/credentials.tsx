/**
 * Credentials: the list (never a key: its hint and plain fields only), a form to store a key for
 * any loaded provider (its fields come from GET /v1/providers, so the multi-field cloud kinds
 * work as the key-based ones do), rotation of the secret fields, and deletion after confirmation.
 * Secret inputs are password fields the browser is asked not to remember; they are cleared once sent.
 */
import { useState } from 'preact/hooks';
import type { Api, Credential, CredentialField, ListOf, Provider } from '../api.js';
import { ConfirmAction, ErrorLine, Section, shortTime, useLoad } from '../components.js';
import type { Abilities } from '../roles.js';

const PLAIN_VIEW_KEYS = new Set(['id', 'object', 'provider', 'key_hint', 'created_at', 'updated_at', 'usage']);

/** One input per declared field; values left empty are left out of the body. */
function FieldInputs({ fields, values, onChange, idPrefix }: {
  fields: CredentialField[]; values: Record<string, string>; onChange: (name: string, value: string) => void; idPrefix: string;
}) {
  return (
    <>
      {fields.map((f) => {
        const id = `${idPrefix}-${f.name}`;
        const common = {
          id, name: f.name, value: values[f.name] ?? '', autocomplete: 'off', spellcheck: false,
          'aria-describedby': `${id}-help`, required: !f.optional, maxLength: f.max_length,
          onInput: (e: Event) => onChange(f.name, (e.target as HTMLInputElement | HTMLTextAreaElement).value),
        };
        return (
          <div class="field" key={f.name}>
            <label for={id}>{f.name}{f.optional ? ' (optional)' : ''}{f.secret ? ' · secret' : ''}</label>
            {f.max_length > 4096 ? <textarea rows={4} {...common} /> : f.secret ? <input type="password" {...common} /> : <input type="text" {...common} />}
            <small id={`${id}-help`}>{f.description}</small>
          </div>
        );
      })}
    </>
  );
}

const filled = (values: Record<string, string>, fields: CredentialField[]): Record<string, string> =>
  Object.fromEntries(fields.filter((f) => (values[f.name] ?? '') !== '').map((f) => [f.name, values[f.name]!]));

function CreateCredential({ api, providers, onCreated }: { api: Api; providers: Provider[]; onCreated: () => void }) {
  const [providerId, setProviderId] = useState(providers.find((p) => p.id === 'openai')?.id ?? providers[0]?.id ?? '');
  const [values, setValues] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<string>();
  const provider = providers.find((p) => p.id === providerId);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!provider) return;
    setBusy(true);
    setError(undefined);
    setCreated(undefined);
    try {
      const c = await api.post<Credential>('/v1/credentials', { provider: provider.id, ...filled(values, provider.credential_fields) });
      setValues({});
      setCreated(`Stored ${c.id} (${c.provider}, ${c.key_hint}).`);
      onCreated();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} aria-label="Store a provider key" class="stack">
      <div class="field">
        <label for="new-provider">Provider</label>
        <select id="new-provider" value={providerId} onChange={(e) => {
          setProviderId((e.target as HTMLSelectElement).value);
          setValues({});
        }}>
          {providers.map((p) => <option value={p.id} key={p.id}>{p.name} ({p.id})</option>)}
        </select>
      </div>
      {provider ? <FieldInputs fields={provider.credential_fields} values={values} idPrefix="new" onChange={(n, v) => setValues({ ...values, [n]: v })} /> : null}
      <button type="submit" disabled={busy || !provider}>Store key</button>
      <ErrorLine error={error} />
      {created ? <p class="ok" role="status">{created}</p> : null}
    </form>
  );
}

function RotateForm({ api, credential, provider, onDone, onCancel }: {
  api: Api; credential: Credential; provider: Provider | undefined; onDone: () => void; onCancel: () => void;
}) {
  const secrets = provider?.credential_fields.filter((f) => f.secret) ?? [];
  const [values, setValues] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api.post(`/v1/credentials/${credential.id}/rotate`, filled(values, secrets));
      setValues({});
      onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} class="stack inset" aria-label={`Rotate ${credential.id}`}>
      <p class="note">New secret for {credential.id}; its tokens keep working with it at once.</p>
      <FieldInputs fields={secrets} values={values} idPrefix={`rotate-${credential.id}`} onChange={(n, v) => setValues({ ...values, [n]: v })} />
      <div class="row">
        <button type="submit" disabled={busy}>Rotate key</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
      <ErrorLine error={error} />
    </form>
  );
}

export function CredentialsPage({ api, can }: { api: Api; can: Abilities }) {
  const providers = useLoad(() => api.get<ListOf<Provider>>('/v1/providers').then((l) => l.data), [api]);
  const list = useLoad(() => api.get<ListOf<Credential>>('/v1/credentials?limit=100'), [api]);
  const [rotating, setRotating] = useState<string>();
  const [notice, setNotice] = useState<string>();

  return (
    <>
      <Section title="Stored keys">
        <ErrorLine error={list.error} />
        {list.data && list.data.data.length === 0 ? <p>No credentials yet.</p> : null}
        {list.data && list.data.data.length > 0 ? (
          <div class="table-wrap">
            <table class="records">
              <thead><tr><th scope="col">Id</th><th scope="col">Provider</th><th scope="col">Key</th><th scope="col">Fields</th><th scope="col">Updated</th>{can.manageCredentials ? <th scope="col">Actions</th> : null}</tr></thead>
              <tbody>
                {list.data.data.map((c) => (
                  <tr key={c.id} data-id={c.id}>
                    <td data-label="Id" class="mono">{c.id}</td>
                    <td data-label="Provider">{c.provider}</td>
                    <td data-label="Key" class="mono">{c.key_hint}</td>
                    <td data-label="Fields">{Object.entries(c).filter(([k]) => !PLAIN_VIEW_KEYS.has(k)).map(([k, v]) => `${k}=${String(v)}`).join(', ')}</td>
                    <td data-label="Updated">{shortTime(c.updated_at)}</td>
                    {can.manageCredentials ? (
                      <td data-label="Actions" class="actions">
                        <button type="button" aria-expanded={rotating === c.id} aria-label={`Rotate ${c.id}`} onClick={() => setRotating(rotating === c.id ? undefined : c.id)}>Rotate</button>
                        <ConfirmAction label="Delete" name={c.id} question={`Delete ${c.id} and every token that uses it?`} confirmLabel="Delete for good" onConfirm={async () => {
                          await api.delete(`/v1/credentials/${c.id}`);
                          setNotice(`Deleted ${c.id}.`);
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
        {rotating && list.data?.data.some((c) => c.id === rotating) ? (
          <RotateForm api={api} credential={list.data.data.find((c) => c.id === rotating)!}
            provider={providers.data?.find((p) => p.id === list.data!.data.find((c) => c.id === rotating)!.provider)}
            onCancel={() => setRotating(undefined)}
            onDone={() => {
              setNotice(`Rotated ${rotating}.`);
              setRotating(undefined);
              list.reload();
            }} />
        ) : null}
        {notice ? <p class="ok" role="status">{notice}</p> : null}
        {list.data?.has_more ? <p class="note">Showing the newest 100.</p> : null}
      </Section>
      {can.manageCredentials ? (
        <Section title="Store a provider key">
          <ErrorLine error={providers.error} />
          {providers.data ? <CreateCredential api={api} providers={providers.data} onCreated={list.reload} /> : null}
        </Section>
      ) : null}
    </>
  );
}
