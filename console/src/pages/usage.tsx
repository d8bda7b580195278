/**
 * Usage and spend: this month's figures against the free tier and the spend limit (GET /v1/usage),
 * and per-day charts of requests, tokens and spend (GET /v1/usage/daily), with the month so far
 * drawn cumulatively against the free-tier request limit and the monthly spend limit. A gateway
 * that does not serve the daily route shows the month's figures and says the charts need it.
 * What is held (set aside by instances, not spent) is shown beside a figure when there is some, and the line below
 * the figures says what it is. Owners and admins set or remove the monthly spend limit here (PATCH /v1/orgs/self), offered where
 * the gateway accounts spend (GET /v1/usage has `spend_usd`).
 */
import { useState } from 'preact/hooks';
import type { Api, DailyUsage, UsageSummary } from '../api.js';
import { ApiFailure } from '../api.js';
import { ErrorLine, Field, FormError, Section, useFormState, useLoad, valueOf } from '../components.js';
import { HELD_MEANS } from '../explanations.js';
import { count, usdText } from '../format.js';
import type { Abilities } from '../roles.js';
import { Chart } from './chart.js';

/** ` (620 held)` after a figure (the line under the figures says what it is); nothing when none is held. */
function heldText(held: number | undefined, show: (n: number) => string): string {
  return held ? ` (${show(held)} held)` : '';
}

const LIMIT_FIELD = [{ name: 'spend_limit_usd', label: 'Monthly spend limit in USD', help: 'An amount such as 100.00; requests that would pass it are refused until the month ends.' }];

const cumulative = (values: number[]): number[] => {
  let sum = 0;
  return values.map((v) => (sum += v));
};

/** The organisation's monthly spend limit: a decimal amount of USD, or none. */
function SpendLimitForm({ api, current, onSaved }: { api: Api; current: string | null; onSaved: () => void }) {
  const [value, setValue] = useState(current ?? '');
  const [saved, setSaved] = useState<string>();
  const form = useFormState('usage', LIMIT_FIELD);
  const save = (limit: string | null) => form.submit(async () => {
    setSaved(undefined);
    await api.patch('/v1/orgs/self', { spend_limit_usd: limit });
    setSaved(limit === null ? 'No monthly limit.' : `Monthly limit set to $${limit}.`);
    if (limit === null) setValue('');
    onSaved();
  }, limit === '' ? LIMIT_FIELD[0] : undefined);
  return (
    <form class="stack" aria-label="Monthly spend limit" noValidate onSubmit={(e) => {
      e.preventDefault();
      void save(value.trim());
    }}>
      <Field id="usage-spend_limit_usd" label={LIMIT_FIELD[0]!.label} help={LIMIT_FIELD[0]!.help} error={form.errorOf('spend_limit_usd')}>
        {(p) => <input {...p} class="short" inputMode="decimal" autocomplete="off" value={value} placeholder="100.00" onInput={(e) => setValue(valueOf(e))} />}
      </Field>
      <div class="row">
        <button type="submit" disabled={form.busy}>Set limit</button>
        {current !== null ? <button type="button" onClick={() => void save(null)}>Remove limit</button> : null}
      </div>
      <FormError state={form} />
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
            <div><dt>Proxy requests</dt><dd data-figure="requests">{count(s.proxy_requests.used)} of {count(s.proxy_requests.limit)}{heldText(s.proxy_requests.held, count)}</dd></div>
            <div><dt>Tokens in / out</dt><dd data-figure="tokens">{count(s.tokens.input)} / {count(s.tokens.output)}</dd></div>
            <div><dt>Stored keys</dt><dd data-figure="credentials">{count(s.credentials.used)} of {count(s.credentials.limit)}</dd></div>
            {s.spend_usd ? (
              <div><dt>Spend</dt><dd data-figure="spend">{usdText(s.spend_usd.used)}{s.spend_usd.limit !== null ? ` of ${usdText(s.spend_usd.limit)}${heldText(Number(s.spend_usd.held ?? 0), () => usdText(s.spend_usd!.held!))}` : ' (no monthly limit)'}</dd></div>
            ) : null}
          </dl>
        ) : null}
        {s && (s.proxy_requests.held || Number(s.spend_usd?.held ?? 0)) ? <p class="note" id="held-means">{HELD_MEANS}</p> : null}
        <p class="note">Period {s?.period ?? '…'} (UTC calendar month). Who and what spent it: <a href="#/spend">Spend by token, credential and model</a>.</p>
        {s?.spend_usd && can.manageCredentials ? <SpendLimitForm api={api} current={s.spend_usd.limit} onSaved={summary.reload} /> : null}
      </Section>
      <Section title="Per day">
        <ErrorLine error={daily.error} />
        {daily.data === null ? <p class="note" data-daily="absent">This gateway does not keep usage per day yet, so there are no charts.</p> : null}
        {daily.data && days.length > 0 ? (
          <div class="charts">
            <Chart id="requests" title="Requests per day" labels={labels} unit="count"
              series={[{ name: 'Requests', values: days.map((d) => d.requests), cls: 's1' }]} />
            <Chart id="tokens" title="Tokens per day" labels={labels} unit="count"
              series={[{ name: 'Input', values: days.map((d) => d.input_tokens), cls: 's1' }, { name: 'Output', values: days.map((d) => d.output_tokens), cls: 's2' }]} />
            <Chart id="spend" title="Spend per day (USD)" labels={labels} unit="usd"
              series={[{ name: 'Spend', values: days.map((d) => Number(d.spend_usd)), cls: 's3' }]} />
            {s && month.length > 0 ? (
              <>
                <Chart id="requests-month" title="Requests this month, cumulative, against the free tier" kind="line" labels={month.map((d) => d.date)} unit="count"
                  series={[{ name: 'Requests so far', values: cumulative(month.map((d) => d.requests)), cls: 's1' }]}
                  limit={{ value: s.proxy_requests.limit, label: 'Free tier' }} />
                <Chart id="spend-month" title="Spend this month, cumulative, against the monthly limit" kind="line" labels={month.map((d) => d.date)} unit="usd"
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
