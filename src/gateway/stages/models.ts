/**
 * models (550): the token's `models` scope, against the model the route's path
 * names (Gemini) or else the body's top-level `model`, which it declares as a
 * body field: the body stage reads it by its streaming scan, for a POST of a
 * models-scoped token only. A bodiless read (GET v1/models, GET
 * v1/responses/{id}) names no model unless its path does, and is not checked.
 */
import { Errors } from '../../errors.js';
import { modelAllowed } from '../../catalog/scopes.js';
import type { BodyNeed } from '../pipeline/contracts.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';

/** Whether this request's model is checked: a models scope, and a model in the path or a body to read. */
const checked = (ctx: RequestContext): boolean =>
  ctx.auth!.token.scopes.models !== undefined && (ctx.params!.model !== undefined || ctx.method === 'POST');

export class ModelsStage implements CoreStage {
  readonly name = 'models';
  readonly priority = 550;
  readonly body: BodyNeed<RequestContext> = { fields: ['model'], when: (ctx) => checked(ctx) && ctx.params!.model === undefined };

  access(ctx: RequestContext): void {
    if (!checked(ctx)) return;
    if (ctx.model === undefined || !modelAllowed(ctx.auth!.token.scopes.models!, ctx.model)) throw Errors.modelNotAllowed(ctx.model ?? '(none)');
  }
}
