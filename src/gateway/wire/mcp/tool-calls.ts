/**
 * Where a forwarded MCP tools/call is reported once its request is over: the
 * tool-call counter (bounded labels, telemetry/metrics.ts) and, when the operator asks
 * for it (KEYWARD_AUDIT_TOOL_CALLS=1), one audit record per call, action
 * `mcp.tool_call`, target `<provider>:<tool>`: the tool's name, never its
 * arguments or its result. And the key a call is counted under in the usage
 * breakdown's models (ToolCallKeys): `tool:<provider>:<tool>`, not `unpriced`.
 */
import type { AuditLog } from '../../../controls/audit-log.js';
import type { Metrics } from '../../../telemetry/metrics.js';
import type { RequestContext } from '../../entry/context.js';

/** What a forwarded tool call is reported to (metrics, audit), once the request is over: the tools stage's sink. */
export interface ToolCallSink {
  toolCalls(ctx: RequestContext, tools: readonly string[]): void;
}

export function toolCallSink(metrics: Metrics | undefined, audit: AuditLog | undefined): ToolCallSink {
  return {
    toolCalls(ctx: RequestContext, tools: readonly string[]): void {
      const provider = ctx.provider!.id;
      for (const tool of tools) {
        metrics?.toolCall(provider, tool);
        // The audit log retries a record the store refused; it never throws here.
        if (audit) void audit.record({ requestId: ctx.requestId, org: ctx.orgId!, actor: ctx.tokenId!, action: 'mcp.tool_call', target: `${provider}:${tool.slice(0, 128)}`, outcome: 'success', ip: ctx.ip });
      }
    },
  };
}

/** A tool name that may be a breakdown key: the tools scope's grammar, no pattern. */
const TOOL_NAME = /^[A-Za-z0-9_./-]{1,128}$/;
/** Tool names an organisation gets keys of its own for, per provider; later ones count as `tool:<provider>:(other)`. */
const PER_ORG = 32;
/** Organisation × provider lists kept (the least recently used is dropped first; its names are found again as used). */
const ORG_ENTRIES = 2_000;

/**
 * The usage breakdown's key for an MCP tool call: `tool:<provider>:<tool>`. A caller names its tools, and every
 * key is a counter in the store each day, so the names are bounded: a name outside the tools grammar, or past an
 * organisation's first PER_ORG names at a provider on this instance, is counted as `tool:<provider>:(other)`.
 */
export class ToolCallKeys {
  private readonly orgs = new Map<string, Set<string>>();

  key(orgId: string, provider: string, tool: string): string {
    const list = `${orgId}\0${provider}`;
    let names = this.orgs.get(list);
    if (names) this.orgs.delete(list); // re-inserted last: the Map's order is the lists' recency
    else names = new Set();
    this.orgs.set(list, names);
    if (this.orgs.size > ORG_ENTRIES) this.orgs.delete(this.orgs.keys().next().value!);
    if (TOOL_NAME.test(tool) && (names.has(tool) || names.size < PER_ORG)) {
      names.add(tool);
      return `tool:${provider}:${tool}`;
    }
    return `tool:${provider}:(other)`;
  }

  /** A request's calls counted per key, in the order first called. */
  count(orgId: string, provider: string, tools: readonly string[]): Map<string, number> {
    const counts = new Map<string, number>();
    for (const tool of tools) {
      const key = this.key(orgId, provider, tool);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return counts;
  }
}
