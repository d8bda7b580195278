/**
 * Pools: sets of keys of one provider that a pooled token spreads its requests over, failing over to the
 * next key before the first response byte when one is rate-limited or down. Everyone who may read sees
 * each pool with its members' health (cooling until when, and their recent 429s, 5xx answers and
 * connection errors); owners and admins create (credentials picked by name, one provider), change the
 * strategy and members, delete after confirmation, and mint a token for a pool.
 */
import { useState } from 'preact/hooks';
import type { Api, Credential, ListOf, Provider, Token } from '../api.js';
import { ConfirmAction, ErrorLine, Field, FormError, NameCell, RecordTable, Section, shortTime, useFormState, useLoad, valueOf } from '../components.js';
import type { FormField } from '../errors.js';
import { count, credentialLabel } from '../format.js';
import type { Abilities } from '../roles.js';
import { MintedToken, MintForm } from './mint.js';

/** A pool as GET /v1/pools shows it. */
export interface Pool {
  id: string;
  name?: string;
  provider: string;
  strategy: Strategy;
  members: Array<{ credential_id: string; weight: number; cooling_until: string | null; recent: { '429': number; '5xx': number; errors: number } }>;
  created_at: string;
}
type Strategy = 'round_robin' | 'ordered' | 'least_busy';

const STRATEGIES: Array<{ id: Strategy; label: string }> = [
  { id: 'round_robin', label: 'Round robin: each key in turn' },
  { id: 'ordered', label: 'Ordered: the first healthy key, the others as fallbacks' },
  { id: 'least_busy', label: 'Least busy: the key with the fewest requests in flight' },
];

const FIELDS: FormField[] = [
  { name: 'name', label: 'Name', help: 'What the pool is for, such as openai keys: lists and the audit trail show it.' },
  { name: 'strategy', label: 'Strategy' },
  { name: 'members', label: 'Keys', help: 'Two or more keys of one provider (at most 16).' },
];

/** One member's health in words: cooling until when, then its recent failures (none: healthy). */
export function healthText(m: Pool['members'][number]): string {
  const recent = [m.recent['429'] ? `${count(m.recent['429'])} rate-limited` : '', m.recent['5xx'] ? `${count(m.recent['5xx'])} server errors` : '', m.recent.errors ? `${count(m.recent.errors)} unreachable` : ''].filter(Boolean);
  const state = m.cooling_until ? `cooling until ${shortTime(m.cooling_until)}` : 'healthy';
  return recent.length ? `${state}; last 5 min: ${recent.join(', ')}` : state;
}

/** The create and edit form: a name, a strategy and the member keys (checkboxes by name, one provider). */
function PoolForm({ api, credentials, providers, pool, onSaved }: { api: Api; credentials: Credential[]; providers: Provider[]; pool?: Pool; onSaved: (p: Pool) => void }) {
  const [name, setName] = useState(pool?.name ?? '');
  const [strategy, setStrategy] = useState<Strategy>(pool?.strategy ?? 'round_robin');
  const [members, setMembers] = useState<string[]>(pool?.members.map((m) => m.credential_id) ?? []);
  const prefix = pool ? `pool-edit-${pool.id}` : 'pool';
  const form = useFormState(prefix, FIELDS);
  const offered = pool ? credentials.filter((c) => c.provider === pool.provider) : credentials;
  const toggle = (id: string) => setMembers(members.includes(id) ? members.filter((m) => m !== id) : [...members, id]);
  const submit = (e: Event) => {
    e.preventDefault();
    void form.submit(async () => {
      const body = { ...(name.trim() ? { name: name.trim() } : pool?.name ? { name: null } : {}), strategy, members: members.map((credential_id) => ({ credential_id })) };
      onSaved(pool ? await api.patch<Pool>(`/v1/pools/${pool.id}`, body) : await api.post<Pool>('/v1/pools', body));
    }, members.length === 0 ? FIELDS[2] : undefined);
  };
  return (
    <form class="stack" aria-label={pool ? `Change pool ${pool.name ?? pool.id}` : 'Create a pool'} noValidate onSubmit={submit}>
      <Field id={`${prefix}-name`} label="Name" help={FIELDS[0]!.help} optional error={form.errorOf('name')}>
        {(p) => <input {...p} type="text" value={name} autocomplete="off" spellcheck={false} onInput={(e) => setName(valueOf(e))} />}
      </Field>
      <Field id={`${prefix}-strategy`} label="Strategy" error={form.errorOf('strategy')}>
        {(p) => <select {...p} value={strategy} onChange={(e) => setStrategy(valueOf(e) as Strategy)}>{STRATEGIES.map((s) => <option key={s.id} value={s.id}>{s.label}</option>)}</select>}
      </Field>
      <fieldset class="stack" id={`${prefix}-members`} tabIndex={-1} aria-describedby={`${prefix}-members-help`}>
        <legend>Keys</legend>
        {offered.map((c) => (
          <label key={c.id} class="check"><input type="checkbox" checked={members.includes(c.id)} onChange={() => toggle(c.id)} /> {credentialLabel(c, providers)}</label>
        ))}
        {form.errorOf('members') ? <p class="field-error" id={`${prefix}-members-error`}>{form.errorOf('members')}</p> : null}
        <small id={`${prefix}-members-help`}>{FIELDS[2]!.help}</small>
      </fieldset>
      <button type="submit" disabled={form.busy}>{pool ? 'Save pool' : 'Create pool'}</button>
      <FormError state={form} />
    </form>
  );
}

export function PoolsPage({ api, can }: { api: Api; can: Abilities }) {
  const list = useLoad(() => api.get<ListOf<Pool>>('/v1/pools?limit=100'), [api]);
  const credentials = useLoad(() => api.get<ListOf<Credential>>('/v1/credentials?limit=100').then((l) => l.data), [api]);
  const providers = useLoad(() => api.get<ListOf<Provider>>('/v1/providers').then((l) => l.data), [api]);
  const [notice, setNotice] = useState<string>();
  const [editing, setEditing] = useState<string>();
  const [minting, setMinting] = useState<Pool>();
  const [minted, setMinted] = useState<Token>();
  const label = (id: string) => {
    const c = credentials.data?.find((x) => x.id === id);
    return c ? credentialLabel(c, providers.data ?? []) : id;
  };
  const what = (p: Pool) => (p.name ? `"${p.name}"` : p.id);
  return (
    <>
      <p class="lead">A pool spreads a token's requests over several keys of one provider. When a key is rate-limited or its provider fails before answering, the request goes to the next key, and that key rests until the provider says it may be used again.</p>
      <Section title="Pools">
        <ErrorLine error={list.error} />
        {list.data && list.data.data.length === 0 ? <p>No pools yet.</p> : null}
        {list.data && list.data.data.length > 0 ? (
          <RecordTable rows={list.data.data} attrs={(p) => ({ 'data-id': p.id })} columns={[
            { label: 'Pool', cls: 'wrap', cell: (p) => <NameCell name={p.name} id={p.id} /> },
            { label: 'Strategy', cell: (p) => STRATEGIES.find((s) => s.id === p.strategy)?.label.split(':')[0] ?? p.strategy },
            { label: 'Keys and health', cls: 'wrap', cell: (p) => (
              <ul class="members">{p.members.map((m) => <li key={m.credential_id} data-health={m.cooling_until ? 'cooling' : 'healthy'}>{label(m.credential_id)}<div class="sub">{healthText(m)}</div></li>)}</ul>
            ) },
            can.manageCredentials && { label: 'Actions', cls: 'actions', cell: (p) => (
              <>
                <button type="button" aria-label={`Change ${what(p)}`} onClick={() => setEditing(editing === p.id ? undefined : p.id)}>Change</button>
                <button type="button" aria-label={`Mint token for ${what(p)}`} onClick={() => {
                  setMinted(undefined);
                  setMinting(p);
                }}>Mint token</button>
                <ConfirmAction label="Delete" name={what(p)} question="Delete this pool? Its tokens stop working at once." confirmLabel="Delete for good" onConfirm={async () => {
                  await api.delete(`/v1/pools/${p.id}`);
                  setNotice(`Deleted ${what(p)} and its tokens.`);
                  list.reload();
                }} />
              </>
            ) },
          ]} />
        ) : null}
        {notice ? <p class="ok" role="status">{notice}</p> : null}
      </Section>
      {editing && credentials.data && providers.data && list.data?.data.find((p) => p.id === editing) ? (
        <Section title="Change the pool">
          <PoolForm api={api} credentials={credentials.data} providers={providers.data} pool={list.data.data.find((p) => p.id === editing)!} onSaved={(p) => {
            setEditing(undefined);
            setNotice(`Saved ${what(p)}.`);
            list.reload();
          }} />
        </Section>
      ) : null}
      {minting && providers.data ? (
        <Section title={`Mint a token for ${minting.name ?? minting.id}`}>
          {minted ? (
            <MintedToken token={minted} credential={credentials.data?.find((c) => c.id === minting.members[0]?.credential_id)} providers={providers.data} nested onDismiss={() => {
              setMinted(undefined);
              setMinting(undefined);
            }} />
          ) : <MintForm api={api} credentials={undefined} minterIds={[minting.id]} providers={providers.data} onMinted={setMinted} />}
        </Section>
      ) : null}
      {can.manageCredentials ? (
        <Section title="Create a pool">
          <ErrorLine error={credentials.error} />
          {credentials.data?.length === 0 ? <p>Store two or more provider keys first: a pool spreads requests over them.</p> : null}
          {credentials.data && credentials.data.length > 0 && providers.data ? <PoolForm api={api} credentials={credentials.data} providers={providers.data} onSaved={(p) => {
            setNotice(`Created ${what(p)}. Mint a token for it to use it.`);
            list.reload();
          }} /> : null}
        </Section>
      ) : null}
    </>
  );
}
