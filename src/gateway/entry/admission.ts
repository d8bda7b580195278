/**
 * The gate: one admission decision per request, made from the request stream
 * itself and the same for every transport (HTTP/1.1, h2c; a WebSocket upgrade
 * enters here as a request without a body, its messages admitted one by one
 * by its session).
 *
 * Whether a body follows is read from the stream's framing, never from a
 * header that merely claims one. HTTP/2: DATA frames follow unless the HEADERS
 * frame ended the stream (END_STREAM, `stream.endAfterHeaders`), whatever
 * `content-length` says or omits (it is advisory there). HTTP/1.1: the framing
 * the parser itself delivers the body by (RFC 9112 §6.3): Transfer-Encoding,
 * or a Content-Length other than 0; neither means no body.
 *
 * Which stages must read a body: each stage that declares `body` and whose
 * `when` holds (default: whenever a body follows). The body stage reads the
 * union of their fields by one streaming scan (body-scan.ts), the unions worked
 * out once per set of readers. `access` (the stage `admit`, priority 0: after
 * quota, the last before forwarding) is the gate's last word and fails
 * closed: every stage that needs this request's body now (a cap learned while
 * the request waited included) had it read to its fields, or the request is
 * refused (503 unavailable, nothing forwarded; what earlier stages took is
 * given back like any refusal's).
 */
import type { IncomingMessage } from 'node:http';
import { Errors } from '../../errors.js';
import type { RequestContext } from './context.js';
import type { CoreStage } from '../pipeline/pipeline.js';
import type { ElementsWanted } from '../wire/json-field-scanner.js';

export const BODY_PRIORITY = 600;

/** What a request's readers asked the scan for, together. */
export interface BodyWanted {
  readonly fields: readonly string[];
  readonly toEnd: boolean;
  readonly anyKeys: readonly string[];
  /** Keys whose values are not searched for `anyKeys` (every reader asking for keys skips them). */
  readonly anyKeysSkip: readonly string[];
  /** The array whose elements are recorded (one per process: every reader asking names the same). */
  readonly elements: ElementsWanted | undefined;
  /** The body is JSON-RPC messages (one, or a batch): fields are read per message. */
  readonly messages: boolean;
  /** The readers it serves, a bit each (their index among the declared readers). */
  readonly readers: number;
}

/** An HTTP/2 request as the compatibility API hands it over: its stream knows how its HEADERS frame ended. */
interface H2Request {
  readonly stream?: { readonly endAfterHeaders?: boolean };
}

/** Whether body bytes follow this request's head, read from the transport's framing (see the file's header). */
export function bodyFollows(req: IncomingMessage): boolean {
  if (req.httpVersionMajor >= 2) return (req as unknown as H2Request).stream?.endAfterHeaders !== true;
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  // Node's parser has refused a Content-Length that is not digits: "0", "00" are no body.
  return length !== undefined && Number(length) !== 0;
}

export class Admission implements CoreStage {
  readonly name = 'admit';
  readonly priority = 0;
  /** The union each set of readers (a bit each) needs, made on first use. */
  private readonly unions = new Map<number, BodyWanted>();

  /** `readers`: the stages that declare `body`, each running after the body stage. */
  constructor(private readonly readers: readonly CoreStage[]) {
    if (readers.length > 30) throw new Error('more than 30 stages declare body fields');
    const arrays = new Set(readers.flatMap((s) => (s.body!.elements ? [s.body!.elements.field] : [])));
    if (arrays.size > 1) throw new Error(`stages ask for the elements of several arrays (${[...arrays].join(', ')}); the body scan records one`);
    for (const s of readers) {
      if (s.priority >= BODY_PRIORITY) throw new Error(`stage ${s.name} declares body fields but runs before the body stage (priority ${s.priority} ≥ ${BODY_PRIORITY})`);
    }
  }

  /** What the body scan must find for this request, or undefined when no reader needs its body. */
  wanted(ctx: RequestContext): BodyWanted | undefined {
    const readers = this.needing(ctx);
    if (readers === 0) return undefined;
    let union = this.unions.get(readers);
    if (!union) {
      const needs = this.readers.filter((_, i) => readers & (1 << i)).map((s) => s.body!);
      const elements = needs.flatMap((n) => (n.elements ? [n.elements] : []));
      union = Object.freeze({
        fields: [...new Set(needs.flatMap((n) => n.fields))],
        // Elements are known only once the array has passed: such a scan reads to the end.
        toEnd: needs.some((n) => n.toEnd === true || n.elements !== undefined || n.messages === true),
        messages: needs.some((n) => n.messages === true),
        anyKeys: [...new Set(needs.flatMap((n) => n.keys ?? []))],
        anyKeysSkip: skippedByAll(needs.filter((n) => n.keys !== undefined && n.keys.length > 0).map((n) => n.keysSkip ?? [])),
        elements: elements.length === 0 ? undefined : { field: elements[0]!.field, values: [...new Set(elements.flatMap((e) => e.values))] },
        readers,
      });
      this.unions.set(readers, union);
    }
    return union;
  }

  /**
   * Right before forwarding: every reader that needs this body now had it read to its fields (`ctx.bodyRead`),
   * else 503 unavailable (fail closed: a retry reads it). Nothing to check when no body follows.
   */
  access(ctx: RequestContext): void {
    if (!ctx.bodyFollows || this.readers.length === 0) return;
    const readers = this.needing(ctx);
    if ((readers & ~ctx.bodyRead) !== 0) throw Errors.unavailable();
  }

  /** The readers (a bit each) that need this request's body: none when no body follows. */
  private needing(ctx: RequestContext): number {
    if (!ctx.bodyFollows) return 0;
    let readers = 0;
    for (let i = 0; i < this.readers.length; i++) {
      const need = this.readers[i]!.body!;
      if (!need.when || need.when(ctx)) readers |= 1 << i;
    }
    return readers;
  }
}

/** The fields every list names (none when there is no list). */
function skippedByAll(lists: ReadonlyArray<readonly string[]>): string[] {
  if (lists.length === 0) return [];
  return lists[0]!.filter((f) => lists.every((l) => l.includes(f)));
}
