/**
 * `keyward usage breakdown --by token|credential|model|team|member [--from D] [--to D]`: GET /v1/usage/breakdown's
 * answer (the same computation, accounting/usage-breakdown.ts, and view) straight on the store, the
 * dearest first.
 */
import { UsageBreakdowns, type BreakdownBy } from '../accounting/usage-breakdown.js';
import { usageBreakdownView } from '../api/views.js';
import { systemClock } from '../clock.js';
import { emit, one, required, withOrg, type Command } from './command-kit.js';
import { table, UsageError } from './io.js';

const BY: readonly BreakdownBy[] = ['token', 'credential', 'model', 'team', 'member'];

export const USAGE_COMMANDS: Command[] = [{
  words: ['usage', 'breakdown'],
  args: [],
  options: ['org', 'by', 'from', 'to'],
  summary: 'requests, tokens and spend per token, credential, model, team or member over a range of days (default: this month)',
  async run(ctx) {
    const by = required(ctx, 'by');
    if (!(BY as readonly string[]).includes(by)) throw new UsageError(`--by must be token, credential, model, team or member, got ${JSON.stringify(by.slice(0, 40))}`);
    const [vault, org] = await withOrg(ctx);
    const breakdowns = new UsageBreakdowns(systemClock, vault.store, vault.store, vault.usage, vault.store);
    const view = usageBreakdownView(await breakdowns.of(org.id, by as BreakdownBy, { from: one(ctx, 'from'), to: one(ctx, 'to') }));
    const rows = view.data.map((r) => [r.key, r.name ?? '', String(r.requests), String(r.input_tokens), String(r.output_tokens), `$${r.spend_usd}`]);
    emit(ctx, view, view.data.length === 0
      ? `No usage from ${view.from} to ${view.to}.`
      : `From ${view.from} to ${view.to}:\n${table([by.toUpperCase(), 'NAME', 'REQUESTS', 'INPUT', 'OUTPUT', 'SPEND'], rows)}`);
  },
}];
