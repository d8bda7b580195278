/**
 * Trust policies: which workload identities (a CI job's or a cloud service's OIDC token: its issuer,
 * audience, subject and further claims) may exchange that token at POST /v1/tokens/exchange for a proxy
 * token of a credential (picked by name), with a lifetime and limits. Everyone who may read sees the
 * list; owners and admins create and delete (after confirmation).
 */
import { useState } from 'preact/hooks';
import type { Api, Credential, ListOf, Provider, TrustPolicy } from '../api.js';
import { ConfirmAction, ErrorLine, Field, FormError, RecordTable, Section, shortTime, useFormState, useLoad, valueOf } from '../components.js';
import type { FormField } from '../errors.js';
import { count, credentialLabel } from '../format.js';
import type { Abilities } from '../roles.js';

const ISSUERS = ['https://token.actions.githubusercontent.com', 'https://accounts.google.com', 'https://gitlab.com'];

const FIELDS: Array<FormField & { placeholder?: string }> = [
  { name: 'issuer', label: 'Issuer', help: 'Who signs the workload\'s token: one the gateway accepts, such as GitHub Actions, Google or GitLab (suggested as you type).' },
  { name: 'audience', label: 'Audience', help: 'The audience the workload asks its token for, usually this gateway\'s URL.' },
  { name: 'subject', label: 'Subject', help: 'The token\'s subject exactly, or its start followed by *, such as repo:acme/app:*.', placeholder: 'repo:acme/app:ref:refs/heads/main' },
  { name: 'claims', label: 'Further claims', help: 'One per line as name=value, each matched exactly. Prefer ids that cannot be re-registered, such as repository_owner_id.', placeholder: 'repository_owner_id=1234567' },
  { name: 'credential_id', label: 'Credential', help: 'The key the exchanged tokens use.' },
  { name: 'ttl', label: 'Token lifetime', help: 'A number and a unit: s, m, h or d, such as 30m.' },
  { name: 'models', label: 'Models', help: 'Only these models, separated by spaces (a prefix may end in *).' },
  { name: 'max_requests', label: 'Most requests per token', help: 'How many requests each exchanged token may make.' },
];
const f = (name: string) => FIELDS.find((x) => x.name === name)!;

/** `name=value` lines → the claims object (values as strings, exactly as typed after the first =). */
export function parseClaims(text: string): Record<string, string> {
  return Object.fromEntries(text.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => {
    const at = l.indexOf('=');
    return at < 0 ? [l, ''] : [l.slice(0, at).trim(), l.slice(at + 1).trim()];
  }));
}

function CreatePolicy({ api, credentials, providers, onCreated }: { api: Api; credentials: Credential[]; providers: Provider[]; onCreated: () => void }) {
  const [v, setV] = useState<Record<string, string>>({ issuer: ISSUERS[0]!, audience: location.origin, ttl: '30m', credential_id: credentials[0]?.id ?? '' });
  const form = useFormState('tp', FIELDS);
  const set = (name: string) => (e: Event) => setV({ ...v, [name]: (e.currentTarget as HTMLInputElement).value });
  const submit = (e: Event) => {
    e.preventDefault();
    const empty = ['issuer', 'audience', 'subject', 'credential_id', 'ttl'].find((n) => !(v[n] ?? '').trim());
    void form.submit(async () => {
      const claims = parseClaims(v.claims ?? '');
      const max = v.max_requests?.trim();
      await api.post('/v1/trust-policies', {
        issuer: v.issuer!.trim(), audience: v.audience!.trim(), subject: v.subject!.trim(), credential_id: v.credential_id, ttl: v.ttl!.trim(),
        ...(Object.keys(claims).length ? { claims } : {}),
        ...(v.models?.trim() ? { models: v.models.trim().split(/[\s,]+/) } : {}),
        ...(max ? { max_requests: /^\d+$/.test(max) ? Number(max) : max } : {}),
      });
      setV({ ...v, subject: '', claims: '' });
      onCreated();
    }, empty ? f(empty) : undefined);
  };
  const text = (name: string, optional = false) => (
    <Field id={`tp-${name}`} label={f(name).label} help={f(name).help} optional={optional} error={form.errorOf(name)}>
      {(p) => <input {...p} type="text" value={v[name] ?? ''} placeholder={f(name).placeholder ?? ''} autocomplete="off" spellcheck={false} onInput={set(name)}
        list={name === 'issuer' ? 'tp-issuers' : undefined} />}
    </Field>
  );
  return (
    <form class="stack" aria-label="Trust a workload identity" noValidate onSubmit={submit}>
      {text('issuer')}
      <datalist id="tp-issuers">{ISSUERS.map((i) => <option key={i} value={i} />)}</datalist>
      {text('audience')}
      {text('subject')}
      <Field id="tp-claims" label={f('claims').label} help={f('claims').help} optional error={form.errorOf('claims')}>
        {(p) => <textarea {...p} rows={3} value={v.claims ?? ''} placeholder={f('claims').placeholder} spellcheck={false} onInput={set('claims')} />}
      </Field>
      <Field id="tp-credential_id" label="Credential" help={f('credential_id').help} error={form.errorOf('credential_id')}>
        {(p) => (
          <select {...p} value={v.credential_id} onChange={(e) => setV({ ...v, credential_id: valueOf(e) })}>
            {credentials.map((c) => <option key={c.id} value={c.id}>{credentialLabel(c, providers)}</option>)}
          </select>
        )}
      </Field>
      {text('ttl')}
      {text('models', true)}
      {text('max_requests', true)}
      <button type="submit" disabled={form.busy}>Create policy</button>
      <FormError state={form} />
    </form>
  );
}

export function TrustPoliciesPage({ api, can }: { api: Api; can: Abilities }) {
  const list = useLoad(() => api.get<ListOf<TrustPolicy>>('/v1/trust-policies?limit=100'), [api]);
  const credentials = useLoad(() => api.get<ListOf<Credential>>('/v1/credentials?limit=100').then((l) => l.data), [api]);
  const providers = useLoad(() => api.get<ListOf<Provider>>('/v1/providers').then((l) => l.data), [api]);
  const [notice, setNotice] = useState<string>();
  const credentialText = (id: string) => {
    const c = credentials.data?.find((x) => x.id === id);
    return c ? credentialLabel(c, providers.data ?? []) : id;
  };
  return (
    <>
      <p class="lead">A CI job or cloud workload already holds a signed identity token. A policy lets it trade that token for a short-lived proxy token, so it needs no secret at all.</p>
      <Section title="Trust policies">
        <ErrorLine error={list.error} />
        {list.data && list.data.data.length === 0 ? <p>No trust policies yet.</p> : null}
        {list.data && list.data.data.length > 0 ? (
          <RecordTable rows={list.data.data} attrs={(p) => ({ 'data-id': p.id })} columns={[
            { label: 'Subject', cls: 'wrap', cell: (p) => (
              <>{p.subject}{Object.keys(p.claims).length ? <div class="sub">{Object.entries(p.claims).map(([k, x]) => `${k}=${String(x)}`).join(', ')}</div> : null}<div class="sub mono">{p.id}</div></>
            ) },
            { label: 'Issuer', cls: 'wrap', cell: (p) => p.issuer },
            { label: 'Audience', cls: 'wrap', cell: (p) => p.audience },
            { label: 'Credential', cell: (p) => credentialText(p.credential_id) },
            { label: 'Tokens', cell: (p) => [`last ${p.ttl}`, p.models ? `models ${p.models.join(' ')}` : '', p.max_requests !== undefined ? `at most ${count(p.max_requests)} requests` : ''].filter(Boolean).join('; ') },
            { label: 'Created', cell: (p) => <>{shortTime(p.created_at)}{p.expires_at ? <div class="sub">ends {shortTime(p.expires_at)}</div> : null}</> },
            can.manageCredentials && { label: 'Actions', cls: 'actions', cell: (p) => (
              <ConfirmAction label="Delete" name={`policy for ${p.subject}`} question="Delete this policy? Exchanges stop at once; tokens it gave live out their lifetime." confirmLabel="Delete for good" onConfirm={async () => {
                await api.delete(`/v1/trust-policies/${p.id}`);
                setNotice(`Deleted the policy for ${p.subject}.`);
                list.reload();
              }} />
            ) },
          ]} />
        ) : null}
        {notice ? <p class="ok" role="status">{notice}</p> : null}
      </Section>
      {can.manageCredentials ? (
        <Section title="Trust a workload identity">
          <ErrorLine error={credentials.error} />
          {credentials.data?.length === 0 ? <p>Store a provider key first: a policy's tokens use one.</p> : null}
          {credentials.data && credentials.data.length > 0 && providers.data ? <CreatePolicy api={api} credentials={credentials.data} providers={providers.data} onCreated={() => {
            setNotice('Policy created.');
            list.reload();
          }} /> : null}
        </Section>
      ) : null}
    </>
  );
}
