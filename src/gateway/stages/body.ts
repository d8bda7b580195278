/**
 * body (600): the body size by content-length (413 before any upstream byte),
 * then, for a request whose body some later stage must read (the gate's
 * Admission: their `body.fields`, when their `body.when` holds and a body
 * follows, judged from the stream, never from content-length), the bounded
 * streaming scan (body-scan.ts): the fields are found while the bytes before
 * them are held within KEYWARD_BUFFER_BUDGET (and the token's share of it),
 * never by buffering the body, and the scan is handed on to the upstream leg.
 * A reader may ask for the whole body (`toEnd`: a spend budget needs its
 * length) and for keys at any depth (`keys`). Every other request streams
 * straight through.
 *
 * With plugins' body hooks loaded (pipeline/body-hooks.ts), the request's body
 * is put through the `requestBody` hooks here, ahead of the scan, so that what
 * the scan reads is what goes upstream; its content-length then no longer
 * describes it (the scan does not hold it to it), and the request carries the
 * hooks on to the upstream leg (its response) and a realtime session.
 */
import { Errors } from '../../errors.js';
import { BodyScan } from '../wire/body-scan.js';
import type { BufferBudget } from '../entry/buffer-budget.js';
import { responseOf, type RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';
import { BODY_PRIORITY, type Admission, type BodyWanted } from '../entry/admission.js';
import { HookedBody, type BodyHooks } from '../pipeline/body-hooks.js';

export { BODY_PRIORITY };

export class BodyStage implements CoreStage {
  readonly name = 'body';
  readonly priority = BODY_PRIORITY;

  /** `hooks`: the plugins' body hooks, when any plugin declares one (undefined: none, and nothing is done for them). */
  constructor(private readonly admission: Admission, private readonly maxBody: number, private readonly budget: BufferBudget, private readonly hooks?: BodyHooks) {}

  access(ctx: RequestContext): Promise<void> | undefined {
    const declared = ctx.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.maxBody) throw Errors.payloadTooLarge(this.maxBody);
    let hooked = false;
    if (this.hooks) {
      ctx.bodyHooks = this.hooks;
      const filter = ctx.body && this.hooks.filter('request', ctx);
      if (filter) {
        ctx.body = new HookedBody(ctx.body!, filter);
        hooked = true;
      }
    }
    const wanted = this.admission.wanted(ctx);
    if (!wanted) return undefined;
    const scan = new BodyScan(ctx.body!, {
      ...wanted, maxBody: this.maxBody, budget: this.budget, holder: ctx.bufferHolder, declared: declared === undefined || hooked ? undefined : Number(declared),
    });
    ctx.bodyScan = scan;
    responseOf(ctx).once('close', () => scan.discard());
    return this.read(ctx, scan, wanted);
  }

  /** Refused later, or the caller left: the held bytes go back to the budget. */
  undo(ctx: RequestContext): void {
    ctx.bodyScan?.discard();
  }

  private async read(ctx: RequestContext, scan: BodyScan, wanted: BodyWanted): Promise<void> {
    const found = await scan.decided;
    ctx.bodyFields = found;
    // Only a scan read to the end knows the body's length and every key in it.
    if (wanted.toEnd) {
      ctx.bodyBytes = scan.bytesRead;
      ctx.bodyKeys = scan.keysFound;
      if (wanted.elements) ctx.bodyElements = scan.elementsFound;
      if (wanted.messages) ctx.bodyMessages = scan.messagesFound;
    }
    if (ctx.model === undefined) {
      const model = found.get('model');
      if (model?.kind === 'string') ctx.model = model.value;
    }
    // What the gate checks before forwarding: these readers had the body read to their fields.
    ctx.bodyRead = wanted.readers;
  }
}
