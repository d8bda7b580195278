/**
 * Usage and spend: this month's figures against the free tier and the spend limit (GET /v1/usage),
 * and per-day charts of requests, tokens and spend (GET /v1/usage/daily), with the month so far
 * drawn cumulatively against the free-tier request limit and the monthly spend limit. A gateway
 * that does not serve the daily route shows the month's figures and says the charts need it.
 * Owners and admins set or remove the monthly spend limit here (PATCH /v1/orgs/self), offered where
 * the gateway accounts spend (GET /v1/usage has `spend_usd`).
 */
import { useState } from 'preact/hooks';
import type { Api, DailyUsage, UsageSummary } from '../api.js';
import { ApiFailure } from '../api.js';
import { ErrorLine, Section, useLoad } from '../components.js';
import type { Abilities } from '../roles.js';
import { Chart } from './chart.js';

const usd = (n: number): string => (n === 0 ? '$0' : n < 0.01 ? `$${n.toFixed(4)}` : `$${n.toFixed(2)}`);
const count = (n: number): string => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e4 ? `${(n / 1e3).toFixed(0)}k` : String(Math.round(n)));

const cumulative = (values: number[]): number[] => {
  let sum = 0;
  return values.map((v) => (sum += v));
};

/** The organisation's monthly spend limit: a decimal amount of USD, or none. */
function SpendLimitForm({ api, current, onSaved }: { api: Api; current: string | null; onSaved: () => void }) {
  const [value, setValue] = useState(current ?? '');
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState<string>();
  const save = async (limit: string | null) => {
    setError(undefined);
    setSaved(undefined);
    try {
      await api.patch('/v1/orgs/self', { spend_limit_usd: limit });
      setSaved(limit === null ? 'No monthly limit.' : `Monthly limit set to $${limit}.`);
      if (limit === null) setValue('');
      onSaved();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <form class="row" aria-label="Monthly spend limit" onSubmit={(e) => {
      e.preventDefault();
      void save(value.trim());
    }}>
      <label for="spend-limit">Monthly spend limit (USD)</label>
      <input id="spend-limit" class="short" inputMode="decimal" autocomplete="off" value={value} placeholder="e.g. 100.00"
        onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
      <button type="submit">Set limit</button>
      {current !== null ? <button type="button" onClick={() => void save(null)}>Remove limit</button> : null}
      <ErrorLine error={error} />
      {saved ? <span class="ok" role="status">{saved}</span> : null}
    </form>
  );
}

export function UsagePage({ api, can }: { api: Api; can: Abilities }) {
  const summary = useLoad(() => api.get<UsageSummary>('/v1/usage'), [api]);
  const daily = useLoad(async () => {
    try {
      return (await api.get<{ data: DailyUsage[] }>('/v1/usage/daily')).data;
    } catch (err) {
      // The route arrived with spend accounting: an older gateway answers 404 No such route.
      if (err instanceof ApiFailure && err.status === 404) return null;
      throw err;
    }
  }, [api]);

  const s = summary.data;
  const days = daily.data ?? [];
  const labels = days.map((d) => d.date);
  const month = s ? days.filter((d) => d.date.startsWith(s.period)) : [];
  const spendLimit = s?.spend_usd?.limit != null ? Number(s.spend_usd.limit) : undefined;

  return (
    <>
      <Section title="This month">
        <ErrorLine error={summary.error} />
        {s ? (
          <dl class="figures" data-period={s.period}>
            <div><dt>Proxy requests</dt><dd data-figure="requests">{s.proxy_requests.used} of {s.proxy_requests.limit}</dd></div>
            <div><dt>Tokens in / out</dt><dd data-figure="tokens">{s.tokens.input} / {s.tokens.output}</dd></div>
            <div><dt>Credentials</dt><dd data-figure="credentials">{s.credentials.used} of {s.credentials.limit}</dd></div>
            {s.spend_usd ? (
              <div><dt>Spend (USD)</dt><dd data-figure="spend">${s.spend_usd.used}{s.spend_usd.limit !== null ? ` of $${s.spend_usd.limit}` : ' (no monthly limit)'}</dd></div>
            ) : null}
          </dl>
        ) : null}
        <p class="note">Period {s?.period ?? '…'} (UTC calendar month).</p>
        {s?.spend_usd && can.manageCredentials ? <SpendLimitForm api={api} current={s.spend_usd.limit} onSaved={summary.reload} /> : null}
      </Section>
      <Section title="Per day">
        <ErrorLine error={daily.error} />
        {daily.data === null ? <p class="note" data-daily="absent">Per-day charts need GET /v1/usage/daily, which this gateway does not serve yet.</p> : null}
        {daily.data && days.length > 0 ? (
          <div class="charts">
            <Chart id="requests" title="Requests per day" labels={labels} format={count}
              series={[{ name: 'Requests', values: days.map((d) => d.requests), cls: 's1' }]} />
            <Chart id="tokens" title="Tokens per day" labels={labels} format={count}
              series={[{ name: 'Input', values: days.map((d) => d.input_tokens), cls: 's1' }, { name: 'Output', values: days.map((d) => d.output_tokens), cls: 's2' }]} />
            <Chart id="spend" title="Spend per day (USD)" labels={labels} format={usd}
              series={[{ name: 'Spend', values: days.map((d) => Number(d.spend_usd)), cls: 's3' }]} />
            {s && month.length > 0 ? (
              <>
                <Chart id="requests-month" title="Requests this month, cumulative, against the free tier" kind="line" labels={month.map((d) => d.date)} format={count}
                  series={[{ name: 'Requests so far', values: cumulative(month.map((d) => d.requests)), cls: 's1' }]}
                  limit={{ value: s.proxy_requests.limit, label: 'Free tier' }} />
                <Chart id="spend-month" title="Spend this month, cumulative, against the monthly limit" kind="line" labels={month.map((d) => d.date)} format={usd}
                  series={[{ name: 'Spend so far', values: cumulative(month.map((d) => Number(d.spend_usd))), cls: 's3' }]}
                  limit={spendLimit !== undefined ? { value: spendLimit, label: 'Spend limit' } : undefined} />
              </>
            ) : null}
          </div>
        ) : null}
      </Section>
    </>
  );
}
