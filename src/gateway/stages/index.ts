/**
 * The core's stages, in a fixed order no configuration changes; the optional
 * plugins KEYWARD_PLUGINS names are slotted in between by their priority (the
 * operators' range, 300..500, checked by the plugin loader):
 *
 *   abuse 1000 · auth 900 · route 800 · scopes 700 · body 600 · models 550 · tools 540 ·
 *   operator plugins 500..300 · rate 250 · concurrency 170 · max_requests 150 · tokens_per_minute 130 · budget 120 · quota 100 ·
 *   admit 0 (the gate's last check: every stage that must read the body had it read)
 *
 * Every one of them is always on, except quota, which the operator may turn off
 * on purpose (KEYWARD_QUOTA=off). A plugin may not take a core stage's name.
 */
import type { Config } from '../../settings/config.js';
import type { ProviderRegistry } from '../../catalog/registry.js';
import type { RateLimiter } from '../../accounting/rate-limiter.js';
import type { QuotaLedger } from '../../accounting/quota-ledger.js';
import type { AbuseGuard } from '../../controls/abuse-guard.js';
import type { BufferBudget } from '../entry/buffer-budget.js';
import type { RequestView } from '../pipeline/contracts.js';
import type { CoreStage } from '../pipeline/pipeline.js';
import { PluginLoadError } from '../pipeline/plugin-loader.js';
import { BodyHooks } from '../pipeline/body-hooks.js';
import type { Logger } from '../../log.js';
import type { SpendHost } from '../exit/spend-host.js';
import type { ToolCallSink } from '../wire/mcp/tool-calls.js';
import { AbuseStage } from './abuse.js';
import { AuthStage, type TokenResolver } from './auth.js';
import { BodyStage } from './body.js';
import { BudgetStage } from './budget.js';
import { Admission } from '../entry/admission.js';
import { MaxRequestsStage } from './max-requests.js';
import { ModelsStage } from './models.js';
import { QuotaStage } from './quota.js';
import { RateStage } from './rate.js';
import { RouteStage } from './route.js';
import { ScopesStage } from './scopes.js';
import { ToolsStage } from './tools.js';
import { ConcurrencyStage, TokensPerMinuteStage } from './limits.js';
import type { TokenLimits } from '../../accounting/token-limits.js';
import type { PriceBook } from '../../pricing/prices.js';

export interface CoreServices {
  config: Pick<Config, 'maxBody' | 'quota'>;
  providers: ProviderRegistry;
  /** Presented proxy token → its token and credential (the auth stage). */
  tokens: TokenResolver;
  guard: AbuseGuard;
  limiter: RateLimiter;
  ledger: QuotaLedger;
  /** Spend caps: prices, each org's cap, reservations (the budget stage; the realtime sessions share it). */
  spend: SpendHost;
  /** Records a refusal in the audit trail (`budget.refused`, `quota.refused`): ids only, aggregated per minute. */
  auditRefusal(ctx: RequestView, action: string): void;
  /** Body bytes held by all requests at once (KEYWARD_BUFFER_BUDGET): one per process, shared with the upstream leg's signers. */
  budget: BufferBudget;
  /** Where forwarded MCP tool calls are counted and (KEYWARD_AUDIT_TOOL_CALLS) audited. */
  toolCalls?: ToolCallSink;
  /** A token's max_concurrent and tokens_per_minute (leased), and the prices their worst case is read from. */
  limits: TokenLimits;
  prices: PriceBook;
  /** Where a plugin's failing body hook is logged. */
  log?: Logger;
}

/** The core's stages and then `plugins` (in KEYWARD_PLUGINS order, which breaks priority ties): the Pipeline sorts them. */
export function pipelineStages(services: CoreServices, plugins: readonly CoreStage[]): CoreStage[] {
  const models = new ModelsStage();
  const tools = new ToolsStage(services.toolCalls ?? { toolCalls: () => {} });
  const perMinute = new TokensPerMinuteStage(services.limits, services.prices, services.providers, services.spend);
  const budget = new BudgetStage(services.spend, services.providers, services.auditRefusal);
  const admission = new Admission([models, tools, perMinute, budget, ...plugins].filter((s) => s.body !== undefined));
  const core: CoreStage[] = [
    new AbuseStage(services.guard),
    new AuthStage(services.tokens, services.providers),
    new RouteStage(services.providers),
    new ScopesStage(),
    new BodyStage(admission, services.config.maxBody, services.budget, BodyHooks.of([...plugins].sort((a, b) => b.priority - a.priority), services.log)),
    models,
    tools,
    new RateStage(services.limiter),
    new ConcurrencyStage(services.limits),
    new MaxRequestsStage(services.ledger),
    perMinute,
    budget,
    ...(services.config.quota === 'on' ? [new QuotaStage(services.ledger, services.auditRefusal)] : []),
    admission,
  ];
  const reserved = new Set([...core.map((s) => s.name), 'quota']);
  for (const plugin of plugins) {
    if (reserved.has(plugin.name)) throw new PluginLoadError(plugin.name, `"${plugin.name}" is the name of a core stage, which is always in the pipeline and cannot be replaced: give the plugin a name of its own`);
  }
  return [...core, ...plugins];
}
