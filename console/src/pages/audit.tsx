/**
 * The audit trail (GET /v1/audit, newest first) with a filter by action (every action the gateway records,
 * from src/controls/audit-actions.ts); each target by the name it had when the action was done
 * (`target_name`) and each actor by its name (`actor_name`) or what it is, the id beneath. The API pages the trail
 * and has no action parameter, so the console reads pages of 100 and filters them: with a filter
 * set, it keeps reading (up to MAX_PAGES a time) until a screenful matches or the trail ends.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api, AuditEvent, ListOf } from '../api.js';
import { AUDIT_ACTIONS } from '../../../src/controls/audit-actions.js';
import { ErrorLine, NameCell, RecordTable, Section, shortTime } from '../components.js';

const PAGE = 100;
const MAX_PAGES = 10;
const SCREENFUL = 50;
/** What an actor without a name is: the organisation token, the operator's token, the command line, nobody known. */
function actorCell(e: AuditEvent) {
  if (e.actor_name !== undefined) return <NameCell name={e.actor_name} id={e.actor} />;
  const what = e.actor.startsWith('otk_') ? 'organisation token' : e.actor === 'admin' ? 'operator token' : e.actor === 'cli' ? 'command line'
    : e.actor.startsWith('oidc:') ? 'workload' : e.actor.startsWith('akey_') ? 'admin key' : e.actor.startsWith('tok_') ? 'proxy token' : undefined;
  if (what === undefined) return <span class="mono">{e.actor}</span>;
  return <>{what}{e.actor === 'admin' || e.actor === 'cli' ? null : <div class="sub mono">{e.actor}</div>}</>;
}

export function AuditPage({ api }: { api: Api }) {
  const [action, setAction] = useState('');
  const [events, setEvents] = useState<AuditEvent[]>([]);
  const [hasMore, setHasMore] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const generation = useRef(0);

  /** Reads pages after `from` until `want` records match `filter` (or the trail or the page budget ends). */
  const read = async (filter: string, from: AuditEvent[], want: number) => {
    const mine = ++generation.current;
    setBusy(true);
    setError(undefined);
    let all = from;
    let more = true;
    try {
      for (let i = 0; i < MAX_PAGES && more; i++) {
        const after = all[all.length - 1]?.id;
        const page = await api.get<ListOf<AuditEvent>>(`/v1/audit?limit=${PAGE}${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`);
        if (mine !== generation.current) return;
        all = [...all, ...page.data];
        more = page.has_more;
        if (all.filter((e) => !filter || e.action === filter).length >= want) break;
      }
      setEvents(all);
      setHasMore(more);
    } catch (err) {
      if (mine === generation.current) setError(err);
    } finally {
      if (mine === generation.current) setBusy(false);
    }
  };

  useEffect(() => {
    void read('', [], SCREENFUL);
  }, [api]);

  const shown = events.filter((e) => !action || e.action === action);
  // Every action the gateway records (its one list), and any other seen in the trail (a plugin's own).
  const actions = [...new Set([...AUDIT_ACTIONS, ...events.map((e) => e.action)])].sort();

  return (
    <Section title="Audit trail">
      <form class="row" aria-label="Filter the audit trail" onSubmit={(e) => e.preventDefault()}>
        <label for="audit-action">Action</label>
        <select id="audit-action" value={action} onChange={(e) => {
          const next = (e.target as HTMLSelectElement).value;
          setAction(next);
          if (next && hasMore && events.filter((x) => x.action === next).length < SCREENFUL) void read(next, events, SCREENFUL);
        }}>
          <option value="">All actions</option>
          {actions.map((a) => <option value={a} key={a}>{a}</option>)}
        </select>
        <button type="button" onClick={() => void read(action, [], SCREENFUL)}>Refresh</button>
      </form>
      <ErrorLine error={error} />
      <p class="note" role="status">{busy ? 'Reading the trail…' : `${shown.length} of ${events.length} records read${action ? ` match ${action}` : ''}.`}</p>
      {shown.length > 0 ? (
        <RecordTable rows={shown} attrs={(e) => ({ 'data-id': e.id, 'data-action': e.action })} columns={[
          { label: 'Time', cls: 'time', cell: (e) => shortTime(e.time) },
          { label: 'Action', cls: 'mono', cell: (e) => `${e.action}${e.count && e.count > 1 ? ` ×${e.count}` : ''}` },
          { label: 'Outcome', cell: (e) => <span class={`badge ${e.outcome}`}>{e.outcome}</span> },
          { label: 'Target', cell: (e) => (e.target_name !== undefined ? <NameCell name={e.target_name} id={e.target} /> : <span class="mono">{e.target}</span>) },
          { label: 'Actor', cell: actorCell },
          { label: 'Address', cls: 'mono', cell: (e) => e.ip },
        ]} />
      ) : null}
      {hasMore ? <button type="button" disabled={busy} onClick={() => void read(action, events, shown.length + SCREENFUL)}>Load older records</button> : null}
    </Section>
  );
}
