/**
 * The built-in stages and where they sit; the plugins loaded from KEYWARD_PLUGINS
 * (auth 900, budget 120 and quota 100 among them) are slotted in by priority:
 *
 *   abuse 1000 · auth 900 · route 800 · scopes 700 · body 600 · models 550 · tools 540 ·
 *   operator plugins 500..300 · rate 250 · concurrency 170 · max_requests 150 · tokens_per_minute 130 · budget 120 · quota 100 ·
 *   admit 0 (the gate's last check: every stage that must read the body had it read)
 */
import type { Config } from '../../config.js';
import type { ProviderRegistry } from '../../catalog/registry.js';
import type { RateLimiter } from '../../accounting/rate-limiter.js';
import type { QuotaLedger } from '../../accounting/quota-ledger.js';
import type { AbuseGuard } from '../../controls/abuse-guard.js';
import type { BufferBudget } from '../buffer-budget.js';
import type { CoreStage } from '../pipeline.js';
import { AbuseStage } from './abuse.js';
import { BodyStage } from './body.js';
import { Admission } from '../admission.js';
import { MaxRequestsStage } from './max-requests.js';
import { ModelsStage } from './models.js';
import { RateStage } from './rate.js';
import { RouteStage } from './route.js';
import { ScopesStage } from './scopes.js';
import { ToolsStage, type ToolCallSink } from './tools.js';
import { ConcurrencyStage, TokensPerMinuteStage } from './limits.js';
import type { TokenLimits } from '../../accounting/token-limits.js';
import type { PriceBook } from '../../catalog/prices.js';

export interface CoreServices {
  config: Config;
  providers: ProviderRegistry;
  guard: AbuseGuard;
  limiter: RateLimiter;
  ledger: QuotaLedger;
  /** Body bytes held by all requests at once (KEYWARD_BUFFER_BUDGET): one per process, shared with the upstream leg's signers. */
  budget: BufferBudget;
  /** Where forwarded MCP tool calls are counted and (KEYWARD_AUDIT_TOOL_CALLS) audited. */
  toolCalls?: ToolCallSink;
  /** A token's max_concurrent and tokens_per_minute (leased), and the prices their worst case is read from. */
  limits: TokenLimits;
  prices: PriceBook;
}

/** The built-ins followed by `plugins` (in KEYWARD_PLUGINS order): the Pipeline sorts them. */
export function pipelineStages(services: CoreServices, plugins: readonly CoreStage[]): CoreStage[] {
  const models = new ModelsStage();
  const tools = new ToolsStage(services.toolCalls ?? { toolCalls: () => {} });
  const perMinute = new TokensPerMinuteStage(services.limits, services.prices, services.providers);
  const admission = new Admission([models, tools, perMinute, ...plugins].filter((s) => s.body !== undefined));
  return [
    new AbuseStage(services.guard),
    new RouteStage(services.providers),
    new ScopesStage(),
    new BodyStage(admission, services.config.maxBody, services.budget),
    models,
    tools,
    new RateStage(services.limiter),
    new ConcurrencyStage(services.limits),
    new MaxRequestsStage(services.ledger),
    perMinute,
    ...plugins,
    admission,
  ];
}
