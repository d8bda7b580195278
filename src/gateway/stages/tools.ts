/**
 * tools (540): an MCP server's JSON-RPC, read from the request body by the body
 * stage's bounded streaming scan (every message of a batch, `id`, `method`
 * and `params.name` of each; a repeated or case-variant key is a 400 there).
 * A body on any method (a GET or DELETE carrying one included) is scanned and
 * judged as a POST's is: a server may read it whatever the method, so none
 * passes unread (and one the scan cannot read is refused, as a POST's is).
 * With a `tools` scope, a `tools/call` of a tool outside it, one whose name
 * cannot be read, or a case variant of `tools/call` or `tools/list` refuses
 * the whole message or batch with a JSON-RPC error (mcp/jsonrpc.ts), nothing
 * forwarded, nothing counted; a `tools/list` has its answer filtered to the
 * scope (mcp/tools-list-filter.ts), and so is any list in the server's event
 * stream (GET), where a resumed answer arrives. Whatever the scope, the request counts as
 * many requests as the `tools/call` messages it forwards (none for other
 * methods, nor a GET's event stream or a DELETE with no body), for quota, `max_requests` and
 * usage, and each call is named in metrics, the span and, with
 * KEYWARD_AUDIT_TOOL_CALLS=1, the audit trail (`mcp.tool_call`, never its
 * arguments or result).
 */
import { toolAllowed } from '../../catalog/scopes.js';
import { foldKey } from '../wire/json-fields.js';
import type { BodyNeed } from '../pipeline/contracts.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';
import { INVALID_PARAMS, isCaseVariant, JsonRpcRefusal, MESSAGE_FIELDS, METHOD_NOT_FOUND, stringField, TOOLS_CALL, TOOLS_LIST, type MessageRefusal } from '../wire/mcp/jsonrpc.js';
import type { ToolCallSink } from '../wire/mcp/tool-calls.js';

const isMcp = (ctx: RequestContext): boolean => ctx.provider?.kind === 'mcp';

export class ToolsStage implements CoreStage {
  readonly name = 'tools';
  readonly priority = 540;
  readonly body: BodyNeed<RequestContext> = { fields: MESSAGE_FIELDS, messages: true, when: isMcp };

  constructor(private readonly sink: ToolCallSink) {}

  access(ctx: RequestContext): void {
    if (!isMcp(ctx)) return;
    const messages = ctx.bodyMessages;
    const scope = ctx.auth!.token.scopes.tools;
    ctx.requestUnits = 0;
    // The server's event stream (GET) may resume a POST's answer (Last-Event-ID), a tools/list answer included.
    if (ctx.method === 'GET' && scope !== undefined) ctx.toolsListFilter = scope;
    // No body (the gate has made sure that one which follows was read: else it refused the request).
    if (!messages) return;
    const calls: string[] = [];
    const refused = new Map<number, MessageRefusal>();
    let lists = false;
    messages.items.forEach((message, i) => {
      const method = stringField(message, 'method');
      if (method === TOOLS_LIST) lists = true;
      if (method === undefined || scope === undefined) {
        // Unscoped, a case variant counts as a call too: a server that folds case would run it.
        if (method !== undefined && foldKey(method) === TOOLS_CALL) calls.push(stringField(message, 'params.name') ?? '(unnamed)');
        return;
      }
      if (isCaseVariant(method)) {
        refused.set(i, { code: METHOD_NOT_FOUND, message: `Method not found: ${JSON.stringify(method)} (method names are case-sensitive).` });
        return;
      }
      if (method !== TOOLS_CALL) return;
      const tool = stringField(message, 'params.name');
      if (tool !== undefined && toolAllowed(scope, tool)) calls.push(tool);
      else refused.set(i, { code: INVALID_PARAMS, message: tool === undefined ? 'Tool not allowed: the call names no tool this token may call.' : `Tool not allowed: ${JSON.stringify(tool.slice(0, 128))} is outside this token's tools.` });
    });
    if (refused.size > 0) throw new JsonRpcRefusal(messages, refused);
    ctx.requestUnits = calls.length;
    ctx.toolCalls = calls;
    if (lists && scope !== undefined) ctx.toolsListFilter = scope;
  }

  log(ctx: RequestContext): void {
    if (ctx.forwarded && ctx.toolCalls && ctx.toolCalls.length > 0) this.sink.toolCalls(ctx, ctx.toolCalls);
  }
}
