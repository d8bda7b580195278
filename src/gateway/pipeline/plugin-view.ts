/**
 * What a plugin's hooks are handed instead of the request's context: a view of its own. Every field of the SDK's
 * RequestView reads through to the context (live: later stages fill in more), and `state` is the plugin's own
 * per-request object, never another plugin's (hono's typed variables, one set per middleware). The context
 * itself stays out of reach: the view holds it in a true private field, so a plugin written in plain JavaScript
 * cannot reach the core's context (the resolved token, the provider) through it either.
 *
 * One small object per plugin per request, made when the plugin's first hook runs and kept in the context's
 * stage scratch space under a key of the plugin's own.
 */
import type { RequestView as PluginRequestView } from '../../../sdk/src/index.js';
import type { RequestView } from './contracts.js';

/** Every field of the SDK's RequestView but `state`: the view reads each through to the context. */
const VIEW_FIELDS = [
  'requestId', 'method', 'path', 'query', 'headers', 'bodyFollows', 'ip', 'startedAt', 'orgId', 'credentialId', 'tokenId',
  'providerId', 'teamId', 'memberId', 'params', 'model', 'bodyFields', 'bodyBytes', 'bodyKeys', 'bodyElements', 'bodyMessages', 'requestUnits',
  'toolCalls', 'quotaRemaining', 'forwarded', 'status', 'error', 'bytesOut', 'ttfbMs', 'usage', 'usageFinal', 'usageUnpriced',
  'costMicros', 'reservedMicros', 'toolFeeMicros', 'spentMicros', 'earlierAttemptsMicros',
] as const satisfies readonly Exclude<keyof PluginRequestView, 'state'>[];

/** Fails to compile when the SDK's RequestView gains a field the list above does not name. */
type Unlisted = Exclude<keyof PluginRequestView, (typeof VIEW_FIELDS)[number] | 'state'>;
const everyFieldListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyFieldListed;

class PluginView {
  readonly #ctx: RequestView;
  #state: Record<string, unknown> | undefined = undefined;

  constructor(ctx: RequestView) {
    this.#ctx = ctx;
  }

  get state(): Record<string, unknown> {
    return (this.#state ??= {});
  }

  static {
    for (const field of VIEW_FIELDS) {
      Object.defineProperty(PluginView.prototype, field, {
        get(this: PluginView) {
          return this.#ctx[field];
        },
        enumerable: true,
      });
    }
  }
}

/** Where a context keeps its plugins' views (RequestContext's `pluginViews`), one slot a plugin, made on first use. */
interface ViewSlots {
  pluginViews: unknown[] | undefined;
}

/** Each loaded plugin's slot in a context's `pluginViews`. */
let slots = 0;

/**
 * A loaded plugin's view maker: `viewOf(ctx)` is the same view for every hook of the same request. Views sit in
 * an array slot of the context, not in its state map: the logging plugin's one hook per request then costs the
 * view alone (no map, no string key).
 */
export function pluginViews(): (ctx: RequestView) => PluginRequestView<unknown> {
  const slot = slots++;
  return (ctx) => {
    const held = ctx as unknown as ViewSlots;
    const views = (held.pluginViews ??= []);
    let view = views[slot] as PluginRequestView<unknown> | undefined;
    if (view === undefined) {
      view = new PluginView(ctx) as unknown as PluginRequestView<unknown>;
      views[slot] = view;
    }
    return view;
  };
}
