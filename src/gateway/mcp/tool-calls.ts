/**
 * Where a forwarded MCP tools/call is reported once its request is over: the
 * tool-call counter (bounded labels, metrics.ts) and, when the operator asks
 * for it (KEYWARD_AUDIT_TOOL_CALLS=1), one audit record per call, action
 * `mcp.tool_call`, target `<provider>:<tool>`: the tool's name, never its
 * arguments or its result.
 */
import type { AuditLog } from '../../controls/audit-log.js';
import type { Metrics } from '../../metrics.js';
import type { RequestContext } from '../context.js';
import type { ToolCallSink } from '../stages/tools.js';

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
