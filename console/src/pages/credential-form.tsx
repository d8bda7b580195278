/**
 * The forms that send a provider's key: storing one (a name, the provider, then one input per field the
 * provider file declares, labelled and explained in its own words from GET /v1/providers) and rotating
 * one's secret fields. Secret inputs are password fields the browser is asked not to remember, cleared
 * once sent; a multi-line secret (a JSON key file) gets a text area; a yes-flag (`federated`) a checkbox,
 * sent as "true" when ticked and left out otherwise. A refusal shows under the field it concerns, in
 * plain words.
 */
import { useState } from 'preact/hooks';
import type { Api, Credential, CredentialField, Provider } from '../api.js';
import { Field, FormError, useFormState, valueOf, type FieldProps, type FormState } from '../components.js';
import type { FormField } from '../errors.js';
import { NAME_FIELD } from './rename.js';

/** A declared field as a form shows it (older gateways send no label: the name, with spaces). */
export const formField = (f: CredentialField): FormField => ({ name: f.name, label: f.label ?? f.name.replace(/_/g, ' '), help: f.help ?? f.description });

/** One input per declared field; values left empty are left out of the body. */
function FieldInputs({ fields, values, onChange, idPrefix, form }: {
  fields: CredentialField[]; values: Record<string, string>; onChange: (name: string, value: string) => void; idPrefix: string; form: FormState;
}) {
  return (
    <>
      {fields.map((f) => {
        const shown = formField(f);
        if (f.flag) {
          return <FlagField key={f.name} id={`${idPrefix}-${f.name}`} field={shown} checked={values[f.name] === 'true'} error={form.errorOf(f.name)}
            onChange={(on) => onChange(f.name, on ? 'true' : '')} />;
        }
        const input = (p: FieldProps) => {
          const common = {
            ...p, name: f.name, value: values[f.name] ?? '', autocomplete: 'off', spellcheck: false, maxLength: f.max_length,
            onInput: (e: Event) => onChange(f.name, (e.currentTarget as HTMLInputElement | HTMLTextAreaElement).value),
          };
          if (f.max_length > 4096) return <textarea rows={4} {...common} />;
          return f.secret ? <input type="password" {...common} /> : <input type="text" {...common} />;
        };
        return (
          <Field key={f.name} id={`${idPrefix}-${f.name}`} label={shown.label} help={shown.help} optional={f.optional} error={form.errorOf(f.name)}>
            {input}
          </Field>
        );
      })}
    </>
  );
}

/** A yes-flag as a checkbox with its label beside it, its help and any refusal below (described by both). */
function FlagField({ id, field, checked, error, onChange }: { id: string; field: FormField; checked: boolean; error: string | undefined; onChange: (on: boolean) => void }) {
  const described = [field.help ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div class={`field${error ? ' invalid' : ''}`}>
      <label class="check" for={id}>
        <input type="checkbox" id={id} name={field.name} checked={checked} onChange={(e) => onChange((e.currentTarget as HTMLInputElement).checked)}
          {...(described ? { 'aria-describedby': described } : {})} {...(error ? { 'aria-invalid': 'true' as const } : {})} />
        <span>{field.label}</span>
      </label>
      {error ? <p class="field-error" id={`${id}-error`}>{error}</p> : null}
      {field.help ? <small id={`${id}-help`}>{field.help}</small> : null}
    </div>
  );
}

const filled = (values: Record<string, string>, fields: CredentialField[]): Record<string, string> =>
  Object.fromEntries(fields.filter((f) => (values[f.name] ?? '') !== '').map((f) => [f.name, values[f.name]!]));

/** The first required field left empty, if any. */
const missing = (values: Record<string, string>, fields: CredentialField[]): FormField | undefined => {
  const f = fields.find((x) => !x.optional && (values[x.name] ?? '').trim() === '');
  return f ? formField(f) : undefined;
};

export function CreateCredential({ api, providers, onCreated }: { api: Api; providers: Provider[]; onCreated: (c: Credential) => void }) {
  const [providerId, setProviderId] = useState(providers.find((p) => p.id === 'openai')?.id ?? providers[0]?.id ?? '');
  const [values, setValues] = useState<Record<string, string>>({});
  const [name, setName] = useState('');
  const [created, setCreated] = useState<string>();
  const provider = providers.find((p) => p.id === providerId);
  const fields = provider?.credential_fields ?? [];
  const form = useFormState('new', [NAME_FIELD, ...fields.map(formField)]);

  const submit = (e: Event) => {
    e.preventDefault();
    if (!provider) return;
    void form.submit(async () => {
      setCreated(undefined);
      const c = await api.post<Credential>('/v1/credentials', { provider: provider.id, ...(name.trim() ? { name: name.trim() } : {}), ...filled(values, fields) });
      setValues({});
      setName('');
      setCreated(`Stored ${c.name ? `"${c.name}"` : `the ${provider.name} key`} (key ${c.key_hint}).`);
      onCreated(c);
    }, missing(values, fields));
  };

  return (
    <form onSubmit={submit} aria-label="Store a provider key" class="stack" noValidate>
      <Field id="new-provider" label="Provider">
        {(p) => (
          <select {...p} value={providerId} onChange={(e) => {
            setProviderId(valueOf(e));
            setValues({});
            form.clear();
          }}>
            {providers.map((x) => <option value={x.id} key={x.id}>{x.name}</option>)}
          </select>
        )}
      </Field>
      <Field id="new-name" label="Name" help="What you call this key, such as prod OpenAI: the token form and the lists show it." optional error={form.errorOf('name')}>
        {(p) => <input {...p} value={name} maxLength={64} autocomplete="off" onInput={(e) => setName(valueOf(e))} />}
      </Field>
      {provider ? <FieldInputs fields={fields} values={values} idPrefix="new" form={form} onChange={(n, v) => setValues({ ...values, [n]: v })} /> : null}
      <p class="note">Secret fields are encrypted when stored and never shown again.</p>
      <button type="submit" disabled={form.busy || !provider}>Store key</button>
      <FormError state={form} />
      {created ? <p class="ok" role="status">{created}</p> : null}
    </form>
  );
}

export function RotateForm({ api, credential, label, provider, onDone, onCancel }: {
  api: Api; credential: Credential; label: string; provider: Provider | undefined; onDone: () => void; onCancel: () => void;
}) {
  const secrets = provider?.credential_fields.filter((f) => f.secret) ?? [];
  const [values, setValues] = useState<Record<string, string>>({});
  const form = useFormState(`rotate-${credential.id}`, secrets.map(formField));
  const submit = (e: Event) => {
    e.preventDefault();
    void form.submit(async () => {
      await api.post(`/v1/credentials/${credential.id}/rotate`, filled(values, secrets));
      setValues({});
      onDone();
    }, missing(values, secrets));
  };
  return (
    <form onSubmit={submit} class="stack inset" aria-label={`Rotate ${label}`} noValidate>
      <p class="note">A new secret for {label}. Its tokens keep working, with the new secret, at once.</p>
      <FieldInputs fields={secrets} values={values} idPrefix={`rotate-${credential.id}`} form={form} onChange={(n, v) => setValues({ ...values, [n]: v })} />
      <div class="row">
        <button type="submit" disabled={form.busy}>Rotate key</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
      <FormError state={form} />
    </form>
  );
}
