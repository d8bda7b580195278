/**
 * JSON-RPC 2.0 as the MCP proxy reads and answers it. The method names are
 * compared exactly, as JSON-RPC says (and as the MCP SDKs dispatch them): a
 * case variant of `tools/call` is not a call the scope allows, and since a
 * server that folded case would run it, a token with a `tools` scope has it
 * refused (method not found) rather than forwarded. A refusal is answered as
 * an MCP client reads it: HTTP 200 with a JSON-RPC error for each request of
 * the message or batch (a refused notification's error has id null), never
 * the contract's error shape, and nothing of it is forwarded.
 */
import { ApiError } from '../../../errors.js';
import type { FieldValue, MessagesFound } from '../json-fields.js';
import { foldKey } from '../json-fields.js';

export const TOOLS_CALL = 'tools/call';
export const TOOLS_LIST = 'tools/list';
/** JSON-RPC's codes: invalid params (a tool outside the scope, as the contract says), method not found. */
export const INVALID_PARAMS = -32602;
export const METHOD_NOT_FOUND = -32601;

/** What the body fields of one message are read as (the tools stage's `body.fields`). */
export const MESSAGE_FIELDS = ['id', 'method', 'params.name'] as const;

export interface MessageRefusal {
  readonly code: number;
  readonly message: string;
}

type JsonRpcId = string | number | null;

/** A message's id as it sent it (undefined: a notification, which no answer names). */
function idOf(message: ReadonlyMap<string, FieldValue>): JsonRpcId | undefined {
  const id = message.get('id');
  if (id === undefined) return undefined;
  if (id.kind === 'string') return id.value ?? null;
  if (id.kind === 'number') return Number.isFinite(id.value) ? id.value : null;
  return null;
}

/** A string field's value, or undefined (absent, another kind, or too long to be read). */
export const stringField = (message: ReadonlyMap<string, FieldValue>, field: string): string | undefined => {
  const v = message.get(field);
  return v?.kind === 'string' ? v.value : undefined;
};

/** A method that is not exactly `tools/call` or `tools/list` but reads as one without case. */
export const isCaseVariant = (method: string): boolean => method !== TOOLS_CALL && method !== TOOLS_LIST && [TOOLS_CALL, TOOLS_LIST].includes(foldKey(method));

const OTHERS_REFUSED: MessageRefusal = { code: INVALID_PARAMS, message: 'Not forwarded: another message of this batch was refused.' };

/** The refusal of a message or batch that holds a call the token may not make: answered in JSON-RPC, HTTP 200. */
export class JsonRpcRefusal extends ApiError {
  override readonly replyBody: unknown;

  constructor(messages: MessagesFound, refused: ReadonlyMap<number, MessageRefusal>) {
    super(200, 'permission', 'tool_not_allowed', [...refused.values()][0]!.message);
    const errors = messages.items.flatMap((m, i) => {
      const id = idOf(m);
      const refusal = refused.get(i);
      if (id === undefined && refusal === undefined) return [];
      const { code, message } = refusal ?? OTHERS_REFUSED;
      return [{ jsonrpc: '2.0', id: id ?? null, error: { code, message } }];
    });
    this.replyBody = messages.batch ? errors : errors[0];
  }
}
