/**
 * models (550): the token's `models` scope, against the model the route's path
 * names (Gemini), a WebSocket upgrade's query names (its route's `modelQuery`:
 * `?model=`), or else the body's top-level `model`, which it declares as a
 * body field: the body stage reads it by its streaming scan, for a POST of a
 * models-scoped token only. A bodiless read (GET v1/models, GET
 * v1/responses/{id}) names no model unless its path does, and is not checked;
 * an upgrade to a route whose query names the model must name one (a session
 * that names its model later, Gemini's `setup`, is checked by its session).
 */
import { Errors } from '../../errors.js';
import { modelAllowed } from '../../catalog/scopes.js';
import type { BodyNeed } from '../pipeline/contracts.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';

/** Whether this request's model is checked: a models scope, and a model in the path, a body to read, or an upgrade's query. */
const checked = (ctx: RequestContext): boolean =>
  ctx.auth!.token.scopes.models !== undefined && (ctx.params!.model !== undefined || ctx.method === 'POST' || ctx.route!.websocket?.modelQuery !== undefined);

export class ModelsStage implements CoreStage {
  readonly name = 'models';
  readonly priority = 550;
  readonly body: BodyNeed<RequestContext> = { fields: ['model'], when: (ctx) => checked(ctx) && ctx.params!.model === undefined };

  access(ctx: RequestContext): void {
    if (!checked(ctx)) return;
    if (ctx.model === undefined || !modelAllowed(ctx.auth!.token.scopes.models!, ctx.model)) throw Errors.modelNotAllowed(ctx.model ?? '(none)');
  }
}
