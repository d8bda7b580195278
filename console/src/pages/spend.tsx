/**
 * Spend by token, credential or model (GET /v1/usage/breakdown): over this month, last month or the
 * last 7 or 30 days, the dearest first, drawn as a ranking (rank-chart.tsx) of the first ten and listed
 * whole in a table (name, requests, tokens, spend, share of the period's spend). Where nothing was
 * priced, the ranking is by requests. Tokens and credentials are shown by name (a credential by its
 * label, as elsewhere); one gone since is said to be. A gateway without the route says so.
 */
import { useState } from 'preact/hooks';
import { ApiFailure, type Api, type Breakdown, type BreakdownRow } from '../api.js';
import { ErrorLine, NameCell, RecordTable, Section, useLoad, valueOf } from '../components.js';
import { count, credentialLabel, usdText } from '../format.js';
import type { Abilities } from '../roles.js';
import { RankChart } from './rank-chart.js';
import { useNames } from './tokens.js';

type By = Breakdown['by'];
type Period = 'month' | 'last-month' | '7d' | '30d';

const BY: Array<{ id: By; label: string }> = [{ id: 'token', label: 'Token' }, { id: 'credential', label: 'Credential' }, { id: 'model', label: 'Model' }, { id: 'team', label: 'Team' }, { id: 'member', label: 'Member' }];
const PERIODS: Array<{ id: Period; label: string }> = [
  { id: 'month', label: 'This month' }, { id: 'last-month', label: 'Last month' }, { id: '7d', label: 'Last 7 days' }, { id: '30d', label: 'Last 30 days' },
];
const SHOWN_IN_CHART = 10;

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** A breakdown key of MCP tool calls, `tool:<provider>:<tool>`, read apart. */
function toolCall(key: string): { provider: string; tool: string } | undefined {
  const m = /^tool:([^:]+):(.+)$/.exec(key);
  return m ? { provider: m[1]!, tool: m[2] === '(other)' ? 'other tools' : m[2]! } : undefined;
}

/** A model row: the price table's name, unpriced models, or an MCP server's tool calls (by tool, named as such). */
function modelCell(key: string) {
  const call = toolCall(key);
  if (call) return <><span class="mono">{call.tool}</span><div class="sub">tool calls, {call.provider}</div></>;
  return <span class="mono">{key === 'unpriced' ? 'unpriced models' : key}</span>;
}

/** The query for a period, from today (UTC); this month is the API's default. */
export function rangeOf(period: Period, now = Date.now()): string {
  const d = new Date(now);
  const [y, m] = [d.getUTCFullYear(), d.getUTCMonth()];
  if (period === 'last-month') return `&from=${day(Date.UTC(y, m - 1, 1))}&to=${day(Date.UTC(y, m, 0))}`;
  if (period === '7d' || period === '30d') return `&from=${day(now - ((period === '7d' ? 7 : 30) - 1) * 86_400_000)}&to=${day(now)}`;
  return '';
}

export function SpendPage({ api, can }: { api: Api; can: Abilities }) {
  const [by, setBy] = useState<By>('token');
  const [period, setPeriod] = useState<Period>('month');
  const breakdown = useLoad(async () => {
    try {
      return await api.get<Breakdown>(`/v1/usage/breakdown?by=${by}${rangeOf(period)}`);
    } catch (err) {
      // An older gateway has no breakdown route.
      if (err instanceof ApiFailure && err.status === 404) return null;
      throw err;
    }
  }, [api, by, period]);
  const { credentials, providers } = useNames(api, can);
  const b = breakdown.data;
  const rows = b?.data ?? [];
  const total = rows.reduce((sum, r) => sum + Number(r.spend_usd), 0);
  const priced = total > 0;

  const labelOf = (r: BreakdownRow): string => {
    if (by === 'model') {
      const call = toolCall(r.key);
      return call ? `${call.tool} (tool calls, ${call.provider})` : r.key;
    }
    if (by === 'credential') {
      const c = credentials.data?.find((x) => x.id === r.key);
      return c ? credentialLabel(c, providers.data) : r.name ?? r.key;
    }
    return r.name ?? r.key;
  };
  const whoCell = (r: BreakdownRow) => {
    if (by === 'model') return modelCell(r.key);
    if (by === 'credential') {
      const c = credentials.data?.find((x) => x.id === r.key);
      if (c) return <NameCell name={credentialLabel(c, providers.data)} id={r.key} />;
      if (credentials.data) return <>{r.name ?? <span class="muted">deleted credential</span>}<div class="sub mono">{r.key}</div></>;
    }
    return <NameCell name={r.name} id={r.key} />;
  };
  const what = BY.find((x) => x.id === by)!.label.toLowerCase();

  return (
    <>
      <Section title="Spend by token, credential or model">
        <div class="row filters">
          <label for="spend-by">Break down by</label>
          <select id="spend-by" value={by} onChange={(e) => setBy(valueOf(e) as By)}>
            {BY.map((x) => <option key={x.id} value={x.id}>{x.label}</option>)}
          </select>
          <label for="spend-period">Period</label>
          <select id="spend-period" value={period} onChange={(e) => setPeriod(valueOf(e) as Period)}>
            {PERIODS.map((x) => <option key={x.id} value={x.id}>{x.label}</option>)}
          </select>
        </div>
        <ErrorLine error={breakdown.error} />
        {b === null ? <p class="note" data-breakdown="absent">This gateway does not break usage down yet.</p> : null}
        {b ? <p class="note" data-range={`${b.from} ${b.to}`}>From {b.from} to {b.to} (UTC){priced ? `: ${usdText(total.toFixed(6).replace(/(\.\d\d\d*?)0+$/, '$1'))} in all` : ''}.</p> : null}
        {b && rows.length === 0 ? <p data-empty="breakdown">No usage in this period.</p> : null}
        {rows.length > 0 ? (
          <>
            <RankChart id={`rank-${by}`} unit={priced ? 'usd' : 'count'}
              title={`${priced ? 'Spend' : 'Requests'} by ${what}${rows.length > SHOWN_IN_CHART ? `, the first ${SHOWN_IN_CHART}` : ''}`}
              rows={rows.slice(0, SHOWN_IN_CHART).map((r) => ({ label: labelOf(r), value: priced ? Number(r.spend_usd) : r.requests }))} />
            <RecordTable rows={rows} attrs={(r) => ({ 'data-key': r.key })} columns={[
              { label: BY.find((x) => x.id === by)!.label, cell: whoCell },
              { label: 'Requests', cls: 'num', cell: (r) => count(r.requests) },
              { label: 'Tokens in / out', cls: 'num', cell: (r) => `${count(r.input_tokens)} / ${count(r.output_tokens)}` },
              { label: 'Spend', cls: 'num', cell: (r) => usdText(r.spend_usd) },
              priced && { label: 'Share', cls: 'num', cell: (r) => `${((Number(r.spend_usd) / total) * 100).toFixed(1)}%` },
            ]} />
          </>
        ) : null}
        <div class="row">
          <button type="button" onClick={breakdown.reload}>Refresh</button>
          <span class="note">Counted in the background: the last second's requests may not show yet.</span>
        </div>
      </Section>
    </>
  );
}
