/**
 * Teams: groups of people with a monthly budget and a tokens_per_minute shared by every token minted for the
 * team, nested between a token's budget and the organisation's spend limit. Everyone who may read sees each
 * team with its budget and this month's spend (used and held, from the ledger its refusals read), its
 * tokens_per_minute, its members and groups, and the longest lifetime of its tokens; owners and admins
 * delete a team after confirmation. The spend per team and per member over a range of days is on the
 * Usage page's breakdown (`by=team`, `by=member`).
 */
import { useState } from 'preact/hooks';
import type { Api, ListOf } from '../api.js';
import { ConfirmAction, ErrorLine, NameCell, RecordTable, Section, useLoad } from '../components.js';
import type { Abilities } from '../roles.js';

/** A team as GET /v1/teams/:id shows it. */
export interface Team {
  id: string;
  name: string;
  members: string[];
  groups: string[];
  credentials: string[];
  pools: string[];
  budget_usd?: string;
  tokens_per_minute?: number;
  max_ttl: string;
  spend?: { used: string; held: string };
}

/** `28800s` → `8 h`: the largest whole unit. */
export function ttlText(ttl: string): string {
  const s = Number(ttl.replace(/s$/, ''));
  for (const [unit, size] of [['d', 86_400], ['h', 3600], ['min', 60]] as const) if (s % size === 0 && s >= size) return `${s / size} ${unit}`;
  return `${s} s`;
}

/** The month's spend against the budget, in words. */
export function budgetText(t: Team): string {
  if (t.budget_usd === undefined) return 'no budget';
  if (!t.spend) return `$${t.budget_usd} a month`;
  return `$${t.spend.used} used, $${t.spend.held} held of $${t.budget_usd} this month`;
}

export function TeamsPage({ api, can }: { api: Api; can: Abilities }) {
  // Each team read on its own for its spend (the list does not carry it); an organisation has few teams.
  const list = useLoad(async () => {
    const page = await api.get<ListOf<Team>>('/v1/teams?limit=100');
    return Promise.all(page.data.map((t) => (t.budget_usd === undefined ? t : api.get<Team>(`/v1/teams/${t.id}`))));
  }, [api]);
  const [notice, setNotice] = useState<string>();
  return (
    <>
      <p class="lead">A team shares a monthly budget and a tokens-per-minute limit across every token minted for it. A request is let through only if its worst case fits its token's budget, its member's, its team's and the organisation's limit.</p>
      <Section title="Teams">
        <ErrorLine error={list.error} />
        {list.data && list.data.length === 0 ? <p>No teams yet. Create one with POST /v1/teams.</p> : null}
        {list.data && list.data.length > 0 ? (
          <RecordTable rows={list.data} attrs={(t) => ({ 'data-id': t.id })} columns={[
            { label: 'Team', cls: 'wrap', cell: (t) => <NameCell name={t.name} id={t.id} /> },
            { label: 'Budget', cls: 'wrap', cell: (t) => budgetText(t) },
            { label: 'Tokens per minute', cell: (t) => (t.tokens_per_minute === undefined ? 'no limit' : t.tokens_per_minute.toLocaleString('en')) },
            { label: 'People', cls: 'wrap', cell: (t) => [...t.members, ...t.groups.map((g) => `group ${g}`)].join(', ') || 'none' },
            { label: 'Tokens live at most', cell: (t) => ttlText(t.max_ttl) },
            can.manageCredentials && { label: 'Actions', cls: 'actions', cell: (t) => (
              <ConfirmAction label="Delete" name={`"${t.name}"`} question="Delete this team? Its tokens stop working at once." confirmLabel="Delete for good" onConfirm={async () => {
                await api.delete(`/v1/teams/${t.id}`);
                setNotice(`Deleted "${t.name}" and its tokens.`);
                list.reload();
              }} />
            ) },
          ]} />
        ) : null}
        {notice ? <p class="ok" role="status">{notice}</p> : null}
      </Section>
    </>
  );
}
