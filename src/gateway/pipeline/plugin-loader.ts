/**
 * Loads the optional middleware plugins KEYWARD_PLUGINS names: a file in the
 * operator's folder (KEYWARD_PLUGINS_DIR: `.ts`, `.mts`, `.js` or `.mjs`, loaded
 * as it is: Node strips a `.ts` file's types), else a built-in one (the
 * package's plugins/), else an npm module. Each becomes a pipeline stage once,
 * at start; anything wrong stops start-up with one line naming the plugin, its
 * file, the field and what was expected, never a request (as Traefik's
 * middlewares do): no `apiVersion` or one this core does not run, a priority
 * outside 300..500 (a plugin may not run before auth or the core's checks, nor
 * after the rate limit or quota), its KEYWARD_PLUGIN_CONFIG section failing its
 * TypeBox `configSchema` (naming the field), a `create` that throws.
 *
 * The contract is the SDK's (`@keyward/sdk`, sdk/src/middleware.ts). A plugin's
 * hooks get a view of the request of their own (plugin-view.ts), whose `state`
 * is the plugin's alone.
 *
 * The core's stages (auth, budget, quota and the rest: stages/index.ts) are no
 * plugins: always on, in their fixed order. KEYWARD_PLUGINS's older values named
 * auth and quota (and budget); those names are ignored with one warning, so an
 * older configuration still starts. A file named like one of them in
 * KEYWARD_PLUGINS_DIR stops start-up: it would never run, and whoever put it
 * there meant it to replace authentication or metering.
 */
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { KindGuard, Type, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Config } from '../../settings/config.js';
import type { Logger } from '../../log.js';
import type { Host, MiddlewareHooks, MiddlewarePlugin } from '../../../sdk/src/index.js';
import { checkApiVersion } from '../../catalog/provider-check.js';
import type { RequestView } from './contracts.js';
import type { CoreStage } from './pipeline.js';
import { pluginViews } from './plugin-view.js';

export class PluginLoadError extends Error {
  constructor(name: string, problem: string, source?: string) {
    super(`plugin ${name}${source ? ` (${source})` : ''}: ${problem}`);
    this.name = 'PluginLoadError';
  }
}

/** Where operator plugins may sit: after the core's checks (body 600), before the rate limit (250). */
export const OPERATOR_PRIORITIES = { min: 300, max: 500 } as const;

/** The hooks that get the plugin's view of the request. */
const VIEW_HOOKS = ['access', 'undo', 'responseHead', 'log'] as const;

/**
 * The files a plugin may be written in, in the order they are looked for: a file of its name, or a folder of its name
 * holding `index` (a plugin with its own package.json). `.ts`/`.mts` load as Node runs them, by stripping erasable types.
 */
const PLUGIN_EXTENSIONS = ['.ts', '.mts', '.js', '.mjs'].flatMap((ext) => [ext, `/index${ext}`]);

interface Found {
  exported: unknown;
  /** The file, or the npm module's name: what error messages point at. */
  source: string;
}

async function importPlugin(name: string, dirs: readonly string[]): Promise<Found> {
  for (const dir of dirs) {
    for (const ext of PLUGIN_EXTENSIONS) {
      const file = path.join(dir, name + ext);
      if (!existsSync(file)) continue;
      try {
        return { exported: (await import(pathToFileURL(file).href)).default, source: file };
      } catch (err) {
        throw new PluginLoadError(name, `failed to load (${(err as Error).message.split('\n')[0]})`, file);
      }
    }
  }
  // Not a file in the folder: an npm module, resolved from the working directory first.
  let specifier = name;
  try {
    specifier = pathToFileURL(createRequire(path.join(process.cwd(), 'noop.js')).resolve(name)).href;
  } catch { /* fall back to resolving from Keyward's own node_modules */ }
  try {
    return { exported: (await import(specifier)).default, source: specifier };
  } catch (err) {
    throw new PluginLoadError(name, `KEYWARD_PLUGINS names it, but there is no ${name}.js (.mjs, .ts, .mts, or ${name}/index.*) in ${dirs.join(' or ')} and no npm module of that name (${(err as Error).message.split('\n')[0]})`);
  }
}

/** The plugin's section of KEYWARD_PLUGIN_CONFIG, defaults applied and checked against its schema. */
function settingsFor(name: string, source: string, mod: MiddlewarePlugin<unknown>, section: unknown): unknown {
  if (mod.configSchema === undefined) return section ?? {};
  const schema: unknown = typeof mod.configSchema === 'function' ? mod.configSchema(Type as never) : mod.configSchema;
  if (!KindGuard.IsSchema(schema)) throw new PluginLoadError(name, '`configSchema` must be a TypeBox schema, or a function of TypeBox\'s Type returning one', source);
  const settings = Value.Default(schema as TSchema, Value.Clone(section ?? {}));
  const problem = Value.Errors(schema as TSchema, settings).First();
  // The path and TypeBox's message only, never the value: a plugin's settings may hold a secret.
  if (problem) throw new PluginLoadError(name, `KEYWARD_PLUGIN_CONFIG ${JSON.stringify(name)}${problem.path || '/'}: ${problem.message}`, source);
  return settings;
}

function checkBody(name: string, source: string, body: unknown): void {
  if (body === undefined) return;
  const b = body as { fields?: unknown; when?: unknown };
  const fields = Array.isArray(b?.fields) ? b.fields : [];
  if (fields.length === 0 || !fields.every((f) => typeof f === 'string' && /^[^.\s]+(\.[^.\s]+)*$/.test(f))) {
    throw new PluginLoadError(name, '`body.fields` must list dotted field names such as "model" or "generationConfig.maxOutputTokens"', source);
  }
  if (b.when !== undefined && typeof b.when !== 'function') throw new PluginLoadError(name, '`body.when` must be a function', source);
  const more = body as { toEnd?: unknown; keys?: unknown };
  if (more.toEnd !== undefined && typeof more.toEnd !== 'boolean') throw new PluginLoadError(name, '`body.toEnd` must be true or false', source);
  if (more.keys !== undefined && !(Array.isArray(more.keys) && more.keys.every((k) => typeof k === 'string' && k.length > 0))) {
    throw new PluginLoadError(name, '`body.keys` must list key names', source);
  }
}

/** A plugin: checked, configured, created, its hooks handed its own view of each request. */
async function pluginStage(name: string, { exported, source }: Found, host: Host, section: unknown): Promise<CoreStage> {
  const fail = (problem: string): never => {
    throw new PluginLoadError(name, problem, source);
  };
  if (typeof exported !== 'object' || exported === null || typeof (exported as MiddlewarePlugin).create !== 'function') {
    fail('the default export must be a middleware plugin: { apiVersion: 1, name, priority, create(host, settings) } (@keyward/sdk defineMiddleware); the first form (a class, or onRequest/onDone) is no longer loaded');
  }
  const mod = exported as MiddlewarePlugin<unknown>;
  checkApiVersion(mod.apiVersion, fail);
  if (typeof mod.name !== 'string' || mod.name === '') fail('`name` must be a non-empty string');
  if (typeof mod.priority !== 'number' || !Number.isFinite(mod.priority)) fail('`priority` must be a number');
  if (mod.priority < OPERATOR_PRIORITIES.min || mod.priority > OPERATOR_PRIORITIES.max) {
    fail(`priority ${mod.priority} is outside ${OPERATOR_PRIORITIES.min}..${OPERATOR_PRIORITIES.max} (a plugin runs after auth and the core's checks, and before the rate limit and quota)`);
  }
  if (mod.maxBuffer !== undefined && !(Number.isSafeInteger(mod.maxBuffer) && mod.maxBuffer >= 0)) fail('`maxBuffer` must be a whole number of bytes');
  const viewOf = pluginViews();
  const settings = settingsFor(name, source, mod, section);
  let hooks: MiddlewareHooks<unknown>;
  try {
    hooks = await mod.create(host, settings);
  } catch (err) {
    return fail(`refused to start: ${(err as Error).message}`);
  }
  if (!hooks || typeof hooks !== 'object') fail('`create` must return an object of hooks');
  const stage: { -readonly [K in keyof CoreStage]: CoreStage[K] } = { name: mod.name, priority: mod.priority };
  if (mod.maxBuffer !== undefined) stage.maxBuffer = mod.maxBuffer;
  const body = hooks.body ?? mod.body;
  if (body !== undefined) {
    checkBody(name, source, body);
    const when = body.when;
    // The body's `when` is asked with the plugin's view too.
    stage.body = when ? { ...body, when: (ctx: RequestView) => when.call(body, viewOf(ctx)) } : body as CoreStage['body'];
  }
  for (const hook of VIEW_HOOKS) {
    const fn = hooks[hook] as unknown;
    if (fn === undefined) continue;
    if (typeof fn !== 'function') fail(`\`${hook}\` must be a function`);
    const bound = (fn as (...args: unknown[]) => unknown).bind(hooks);
    // Two parameters at most (responseHead's head): no rest array per call.
    (stage as Record<string, unknown>)[hook] = (ctx: RequestView, second?: unknown) => bound(viewOf(ctx), second);
  }
  for (const hook of ['requestBody', 'responseBody'] as const) {
    const fn = hooks[hook] as unknown;
    if (fn === undefined) continue;
    if (typeof fn !== 'function') fail(`\`${hook}\` must be a function`);
    const bound = (fn as (piece: Uint8Array | null, view: unknown) => unknown).bind(hooks);
    // The piece first, then the plugin's own view of the request (its `state` its own).
    (stage as Record<string, unknown>)[hook] = (piece: Uint8Array | null, ctx: RequestView) => bound(piece, viewOf(ctx));
  }
  if (hooks.close !== undefined) {
    if (typeof hooks.close !== 'function') fail('`close` must be a function');
    stage.close = hooks.close.bind(hooks);
  }
  // A body hook's bound is declared, never assumed (0: it may change pieces, never hold one back).
  if ((stage.requestBody || stage.responseBody) && mod.maxBuffer === undefined) {
    fail('`maxBuffer` (bytes its body hooks may hold back per request, 0 or more) must be declared beside `priority` with a requestBody or responseBody hook');
  }
  if (!stage.access && !stage.responseHead && !stage.log && !stage.requestBody && !stage.responseBody) fail('a plugin needs an access, responseHead, log, requestBody or responseBody hook');
  return stage;
}

/** Core stages that were plugins once: never loaded from a file (stages/auth.ts, budget.ts, quota.ts are the core's). */
const CORE_STAGES = ['auth', 'quota', 'budget'] as const;

/** Where plugins come from: the operator's folder (KEYWARD_PLUGINS_DIR) and the package's built-in one. */
export interface PluginDirs {
  /** KEYWARD_PLUGINS_DIR, when set. */
  dir: string | undefined;
  builtinDir: string;
}

const sameDir = (a: string, b: string): boolean => {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return path.resolve(a) === path.resolve(b);
  }
};

/** Refuses an operator's folder holding `auth`, `quota` or `budget` (any case: some file systems ignore it), listed or not. */
function refuseCoreNames(dirs: PluginDirs): void {
  if (dirs.dir === undefined || sameDir(dirs.dir, dirs.builtinDir)) return;
  let files: string[];
  try {
    files = readdirSync(dirs.dir);
  } catch {
    return; // config.ts checked the folder exists; an unreadable one fails where a plugin is looked up
  }
  for (const f of files.sort()) {
    const m = /^(.*)\.(m?js|m?ts)$/i.exec(f);
    if (m && (CORE_STAGES as readonly string[]).includes(m[1]!.toLowerCase())) {
      throw new PluginLoadError(m[1]!.toLowerCase(), `KEYWARD_PLUGINS_DIR holds ${path.join(dirs.dir, f)}, named like the core stage ${m[1]!.toLowerCase()}, which is always on and which no plugin replaces; rename or remove it`);
    }
  }
}

/**
 * The configured plugins as stages, in KEYWARD_PLUGINS order (the Pipeline sorts by priority; that order
 * breaks ties), each looked up in the configured folder first, then the package's.
 */
export async function loadPlugins(config: Pick<Config, 'plugins' | 'pluginsIgnored' | 'pluginsDir' | 'builtinPluginsDir' | 'pluginSettings'>, host: Host, log: Logger): Promise<CoreStage[]> {
  const names = config.plugins;
  if (config.pluginsIgnored.length > 0) {
    log.warn({ ignored: config.pluginsIgnored, plugins: names }, `KEYWARD_PLUGINS names ${config.pluginsIgnored.join(', ')}: core stages, always on and not configured there; ignored (list optional plugins only, such as logging)`);
  }
  for (const configured of Object.keys(config.pluginSettings)) {
    if ((CORE_STAGES as readonly string[]).includes(configured)) throw new PluginLoadError(configured, 'KEYWARD_PLUGIN_CONFIG configures it, but it is a core stage, which takes no plugin settings');
    if (!names.includes(configured)) throw new PluginLoadError(configured, 'KEYWARD_PLUGIN_CONFIG configures it, but KEYWARD_PLUGINS does not list it');
  }
  const dirs = { dir: config.pluginsDir, builtinDir: config.builtinPluginsDir };
  refuseCoreNames(dirs);
  const searched = [...new Set([...(dirs.dir === undefined ? [] : [dirs.dir]), dirs.builtinDir])];
  const stages: CoreStage[] = [];
  for (const name of names) {
    const found = await importPlugin(name, searched);
    if (dirs.dir !== undefined && !sameDir(dirs.dir, dirs.builtinDir) && found.source.startsWith(dirs.dir + path.sep) && PLUGIN_EXTENSIONS.some((ext) => existsSync(path.join(dirs.builtinDir, name + ext)))) {
      log.warn({ plugin: name, file: found.source }, `plugin ${name} from ${found.source} takes the place of the built-in plugin of that name`);
    }
    stages.push(await pluginStage(name, found, host, config.pluginSettings[name]));
  }
  return stages;
}
