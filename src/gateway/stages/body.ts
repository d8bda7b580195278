/**
 * body (600): the body size by content-length (413 before any upstream byte),
 * then, for a request some later stage needs body fields of (its `body.fields`,
 * when its `body.when` says so), the bounded streaming scan (body-scan.ts): the
 * fields are found while the bytes before them are held within
 * KEYWARD_BUFFER_BUDGET, never by buffering the body, and the scan is handed
 * on to the upstream leg. A consumer may ask for the whole body (`toEnd`: a
 * spend budget needs its length) and for keys at any depth (`keys`). Every
 * other request streams straight through.
 */
import { Errors } from '../../errors.js';
import { BodyScan } from '../body-scan.js';
import type { BufferBudget } from '../buffer-budget.js';
import { requestOf, responseOf, type RequestContext } from '../context.js';
import type { CoreStage } from '../pipeline.js';

export const BODY_PRIORITY = 600;

/** The union of what a request's consumers asked the scan for. */
interface Wanted {
  fields: readonly string[];
  toEnd: boolean;
  anyKeys: readonly string[];
}

/** Default `body.when`: the request carries a body. */
const hasBody = (ctx: RequestContext): boolean => {
  const length = ctx.headers['content-length'];
  return ctx.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
};

export class BodyStage implements CoreStage {
  readonly name = 'body';
  readonly priority = BODY_PRIORITY;
  /** What is wanted, per set of consumers that need the body (a bit each): unions made once, on first use. */
  private readonly unions = new Map<number, Wanted>();

  /** `consumers`: the stages that declare `body`, each running after this one. */
  constructor(private readonly consumers: readonly CoreStage[], private readonly maxBody: number, private readonly budget: BufferBudget) {
    if (consumers.length > 30) throw new Error('more than 30 stages declare body fields');
    for (const s of consumers) {
      if (s.priority >= BODY_PRIORITY) throw new Error(`stage ${s.name} declares body fields but runs before the body stage (priority ${s.priority} ≥ ${BODY_PRIORITY})`);
    }
  }

  access(ctx: RequestContext): Promise<void> | undefined {
    const declared = ctx.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.maxBody) throw Errors.payloadTooLarge(this.maxBody);
    const wanted = this.wantedFor(ctx);
    if (!wanted) return undefined;
    const scan = new BodyScan(requestOf(ctx), { ...wanted, maxBody: this.maxBody, budget: this.budget });
    ctx.bodyScan = scan;
    responseOf(ctx).once('close', () => scan.discard());
    return this.read(ctx, scan, wanted.toEnd);
  }

  /** Refused later, or the caller left: the held bytes go back to the budget. */
  undo(ctx: RequestContext): void {
    ctx.bodyScan?.discard();
  }

  private async read(ctx: RequestContext, scan: BodyScan, toEnd: boolean): Promise<void> {
    const found = await scan.decided;
    ctx.bodyFields = found;
    // Only a scan read to the end knows the body's length and every key in it.
    if (toEnd) {
      ctx.bodyBytes = scan.bytesRead;
      ctx.bodyKeys = scan.keysFound;
    }
    if (ctx.model === undefined) {
      const model = found.get('model');
      if (model?.kind === 'string') ctx.model = model.value;
    }
  }

  /** What this request's consumers need, or undefined when none does. */
  private wantedFor(ctx: RequestContext): Wanted | undefined {
    let wanted = 0;
    for (let i = 0; i < this.consumers.length; i++) {
      const need = this.consumers[i]!.body!;
      if (need.when ? need.when(ctx) : hasBody(ctx)) wanted |= 1 << i;
    }
    if (wanted === 0) return undefined;
    let union = this.unions.get(wanted);
    if (!union) {
      const needs = this.consumers.filter((_, i) => wanted & (1 << i)).map((s) => s.body!);
      union = {
        fields: [...new Set(needs.flatMap((n) => n.fields))],
        toEnd: needs.some((n) => n.toEnd === true),
        anyKeys: [...new Set(needs.flatMap((n) => n.keys ?? []))],
      };
      this.unions.set(wanted, union);
    }
    return union;
  }
}
