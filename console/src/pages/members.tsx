/**
 * Members: the people of the organisation, made at their first sign-in by single sign-on (GET /v1/members).
 * Everyone who may read sees each member's e-mail address, name, role (from its provider groups), monthly
 * budget and last sign-in; owners and admins set a member's monthly budget (PATCH /v1/members/:id
 * `{"budget_usd"}`, null for none) in a small form under the list, and remove a member after confirmation
 * (its sessions and personal tokens stop working at once). The newest hundred first; "Show 100 more" reads the
 * next pages (`starting_after`), and a change reloads as many as were shown.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api, ListOf, Role } from '../api.js';
import { ConfirmAction, ErrorLine, Field, FormError, RecordTable, Section, shortTime, useFormState, useLoad, valueOf } from '../components.js';
import type { Abilities } from '../roles.js';

/** A member as GET /v1/members lists it. */
export interface Member {
  id: string;
  email: string | null;
  name: string | null;
  role: Role;
  budget_usd: string | null;
  last_sign_in_at: string;
}

const BUDGET_FIELD = { name: 'budget_usd', label: 'Monthly budget in US dollars' };

const who = (m: Member): string => m.email ?? m.name ?? m.id;

function BudgetForm({ api, member, onDone, onCancel }: { api: Api; member: Member; onDone: (notice: string) => void; onCancel: () => void }) {
  const [value, setValue] = useState(member.budget_usd ?? '');
  const form = useFormState('member', [BUDGET_FIELD]);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), [member.id]);
  const save = (budget: string | null) => form.submit(async () => {
    await api.patch(`/v1/members/${member.id}`, { budget_usd: budget });
    onDone(budget === null ? `${who(member)} has no budget now.` : `${who(member)} may spend $${budget} a month.`);
  }, budget === '' ? BUDGET_FIELD : undefined);
  return (
    <form class="stack inset" aria-label={`Monthly budget of ${who(member)}`} noValidate onSubmit={(e) => {
      e.preventDefault();
      void save(value.trim());
    }}>
      <Field id="member-budget_usd" label={`Monthly budget of ${who(member)}, in US dollars`} help="What this person's requests may cost per calendar month (UTC), such as 50.00." error={form.errorOf('budget_usd')}>
        {(p) => <input {...p} ref={input} inputMode="decimal" autocomplete="off" value={value} maxLength={20} onInput={(e) => setValue(valueOf(e))} />}
      </Field>
      <div class="row">
        <button type="submit" disabled={form.busy}>Save budget</button>
        {member.budget_usd !== null ? <button type="button" disabled={form.busy} onClick={() => void save(null)}>Remove the budget</button> : null}
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
      <FormError state={form} />
    </form>
  );
}

/** A page of the list, as many as the API gives at once. */
const PAGE = 100;

/** The newest `wanted` members (fewer when there are no more), page after page. */
async function newestMembers(api: Api, wanted: number): Promise<ListOf<Member>> {
  const data: Member[] = [];
  let hasMore = true;
  while (hasMore && data.length < wanted) {
    const after = data[data.length - 1]?.id;
    const page = await api.get<ListOf<Member>>(`/v1/members?limit=${PAGE}${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`);
    data.push(...page.data);
    hasMore = page.has_more;
  }
  return { data, has_more: hasMore };
}

export function MembersPage({ api, can }: { api: Api; can: Abilities }) {
  const [wanted, setWanted] = useState(PAGE);
  const list = useLoad(() => newestMembers(api, wanted), [api, wanted]);
  const [editing, setEditing] = useState<Member>();
  const [notice, setNotice] = useState<string>();
  return (
    <>
      <p class="lead">People appear here at their first sign-in with the organisation's single sign-on; their role comes from their groups at the provider. A member's budget caps what all of its tokens may spend together each month.</p>
      <Section title="Members">
        <ErrorLine error={list.error} />
        {list.data && list.data.data.length === 0 ? <p>No members yet. People appear here once they sign in with single sign-on.</p> : null}
        {list.data && list.data.data.length > 0 ? (
          <RecordTable rows={list.data.data} attrs={(m) => ({ 'data-id': m.id })} columns={[
            { label: 'E-mail', cls: 'wrap', cell: (m) => <>{m.email ?? <span class="muted">none</span>}<div class="sub mono">{m.id}</div></> },
            { label: 'Name', cls: 'wrap', cell: (m) => m.name ?? '—' },
            { label: 'Role', cell: (m) => m.role },
            { label: 'Monthly budget', cell: (m) => (m.budget_usd === null ? 'no budget' : `$${m.budget_usd}`) },
            { label: 'Last sign-in', cell: (m) => shortTime(m.last_sign_in_at) },
            can.manageMembers && { label: 'Actions', cls: 'actions', cell: (m) => (
              <div class="row">
                <button type="button" aria-label={`Set budget of ${who(m)}`} onClick={() => {
                  setNotice(undefined);
                  setEditing(m);
                }}>Set budget</button>
                <ConfirmAction label="Remove" name={who(m)} question="Remove this member? Its sessions and personal tokens stop working at once." confirmLabel="Remove for good" onConfirm={async () => {
                  await api.delete(`/v1/members/${m.id}`);
                  setEditing(undefined);
                  setNotice(`Removed ${who(m)}.`);
                  list.reload();
                }} />
              </div>
            ) },
          ]} />
        ) : null}
        {list.data?.has_more ? (
          <p class="row"><span class="note">Showing the newest {list.data.data.length}.</span>
            <button type="button" disabled={list.loading} onClick={() => setWanted(list.data!.data.length + PAGE)}>Show {PAGE} more</button></p>
        ) : null}
        {editing ? (
          <BudgetForm api={api} member={editing} onCancel={() => setEditing(undefined)} onDone={(message) => {
            setNotice(message);
            setEditing(undefined);
            list.reload();
          }} />
        ) : null}
        {notice ? <p class="ok" role="status">{notice}</p> : null}
      </Section>
    </>
  );
}
