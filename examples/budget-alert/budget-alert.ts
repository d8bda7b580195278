/**
 * budget-alert: a webhook when a token's, a team's or an organisation's spend passes 50, 80 and 100 % of a cap. It
 * counts what each request spent (`spentMicros`, after its last byte) against the caps its settings give, per
 * token, per team (a token minted for a team: `teamId`) and per organisation, on this instance since it started; each threshold is announced once. The payload holds ids and
 * amounts only: never a key, a token value, a header or a body. A delivery that fails (no answer, or a status other
 * than 2xx) is retried with exponential back-off on the host's timers, up to `attempts` in all.
 *
 * KEYWARD_PLUGIN_CONFIG: { "budget-alert": { "webhook": "https://hooks.example.com/keyward",
 *   "orgs": { "org_…": 500 }, "teams": { "team_…": 100 }, "tokens": { "tok_…": 20, "*": 5 } } }
 *   (caps in USD; "*": every other one)
 */
import type { Host, MiddlewarePlugin } from '@keyward/sdk';

interface Settings {
  webhook: string;
  orgs: Record<string, number>;
  teams: Record<string, number>;
  tokens: Record<string, number>;
  thresholds: number[];
  attempts: number;
  backoffMs: number;
  timeoutMs: number;
}

type Level = 'token' | 'team' | 'org';

/** What the webhook receives: one threshold passed by one token, team or organisation. */
export interface BudgetAlert {
  type: 'keyward.budget.threshold';
  level: Level;
  id: string;
  org: string | undefined;
  threshold_percent: number;
  spent_usd: string;
  cap_usd: string;
  at: string;
}

/** https, or http on this machine only (a test's receiver, a sidecar). */
const allowedWebhook = (url: string): boolean => {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  return u.protocol === 'https:' || (u.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname));
};

function deliveries(host: Host, settings: Settings) {
  const cancels = new Set<() => void>();
  const send = async (alert: BudgetAlert, attempt: number): Promise<void> => {
    let outcome: string;
    try {
      const r = await fetch(settings.webhook, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'keyward-budget-alert' },
        body: JSON.stringify(alert),
        signal: AbortSignal.timeout(settings.timeoutMs),
      });
      await r.body?.cancel();
      if (r.ok) return;
      outcome = `status ${r.status}`;
    } catch (err) {
      outcome = (err as Error).name;
    }
    if (attempt + 1 >= settings.attempts) {
      host.logger.warn({ level: alert.level, id: alert.id, threshold_percent: alert.threshold_percent, attempts: attempt + 1, outcome }, 'budget-alert: webhook not delivered');
      return;
    }
    // 1×, 2×, 4×… the back-off, on the host's timers (tests drive them).
    const cancel = host.timers.after(settings.backoffMs * 2 ** attempt, () => {
      cancels.delete(cancel);
      return send(alert, attempt + 1);
    });
    cancels.add(cancel);
  };
  return {
    send: (alert: BudgetAlert) => void send(alert, 0),
    close: () => {
      for (const cancel of cancels) cancel();
      cancels.clear();
    },
  };
}

const budgetAlert = {
  apiVersion: 1,
  name: 'budget-alert',
  priority: 310,
  configSchema: (Type) => Type.Object({
    webhook: Type.String({ minLength: 1 }),
    orgs: Type.Record(Type.String(), Type.Number({ exclusiveMinimum: 0 }), { default: {} }),
    teams: Type.Record(Type.String(), Type.Number({ exclusiveMinimum: 0 }), { default: {} }),
    tokens: Type.Record(Type.String(), Type.Number({ exclusiveMinimum: 0 }), { default: {} }),
    thresholds: Type.Array(Type.Integer({ minimum: 1, maximum: 100 }), { default: [50, 80, 100], minItems: 1 }),
    attempts: Type.Integer({ minimum: 1, maximum: 20, default: 5 }),
    backoffMs: Type.Integer({ minimum: 1, default: 1000 }),
    timeoutMs: Type.Integer({ minimum: 1, default: 5000 }),
  }),
  create(host, settings) {
    if (!allowedWebhook(settings.webhook)) throw new Error('`webhook` must be an https URL (or http on 127.0.0.1)');
    const thresholds = [...settings.thresholds].sort((a, b) => a - b);
    const spent = new Map<string, number>();
    const announced = new Map<string, number>();
    const out = deliveries(host, settings);
    const usd = (micros: number): string => host.usd(micros);

    const count = (level: Level, id: string, org: string | undefined, capUsd: number | undefined, micros: number): void => {
      if (capUsd === undefined) return;
      const key = `${level}:${id}`;
      const total = (spent.get(key) ?? 0) + micros;
      spent.set(key, total);
      const capMicros = Math.round(capUsd * 1e6);
      const already = announced.get(key) ?? 0;
      for (const threshold of thresholds) {
        if (threshold <= already || total * 100 < capMicros * threshold) continue;
        announced.set(key, threshold);
        out.send({ type: 'keyward.budget.threshold', level, id, org, threshold_percent: threshold, spent_usd: usd(total), cap_usd: usd(capMicros), at: new Date(host.clock.now()).toISOString() });
      }
    };

    return {
      log(ctx) {
        const micros = ctx.spentMicros;
        if (micros === undefined || micros <= 0) return;
        if (ctx.tokenId !== undefined) count('token', ctx.tokenId, ctx.orgId, settings.tokens[ctx.tokenId] ?? settings.tokens['*'], micros);
        if (ctx.teamId !== undefined) count('team', ctx.teamId, ctx.orgId, settings.teams[ctx.teamId] ?? settings.teams['*'], micros);
        if (ctx.orgId !== undefined) count('org', ctx.orgId, ctx.orgId, settings.orgs[ctx.orgId] ?? settings.orgs['*'], micros);
      },
      close() {
        out.close();
      },
    };
  },
} satisfies MiddlewarePlugin<Record<string, never>, Settings>;

export default budgetAlert;
