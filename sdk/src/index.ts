/**
 * @keyward/sdk: what an author of a Keyward provider or middleware imports. Types, and two identity helpers
 * that check a plugin against them: `defineProvider` and `defineMiddleware`. Nothing here depends on Keyward
 * itself; everything a plugin uses at run time (errors, logger, clock, settings) is handed to it by the host.
 * Plugin API version 1 (`apiVersion: 1`).
 *
 * @packageDocumentation
 */
import type { MiddlewarePlugin } from './middleware.js';
import type { ProviderPlugin } from './provider.js';

export type { ApiVersion } from './version.js';
export type * from './provider.js';
export type * from './prices.js';
export type * from './request.js';
export type * from './middleware.js';
export type * from './realtime.js';
export type * from './host.js';
export type * from './errors.js';

/** A provider file's default export, checked against the contract: `export default defineProvider({ apiVersion: 1, id: 'acme', … })`. */
export function defineProvider<const P extends ProviderPlugin>(provider: P): P {
  return provider;
}

/**
 * A middleware file's default export, checked against the contract; `State` types `ctx.state` (the plugin's own
 * per-request object), `Settings` what `create` is handed: `defineMiddleware<{ startedAt: number }>({ … })`.
 */
export function defineMiddleware<State = Record<string, unknown>, Settings = any>(plugin: MiddlewarePlugin<State, Settings>): MiddlewarePlugin<State, Settings> {
  return plugin;
}
