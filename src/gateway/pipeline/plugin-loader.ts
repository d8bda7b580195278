/**
 * Loads the optional middleware plugins KEYWARD_PLUGINS names: a compiled file
 * in the plugins folder, else an npm module. Each becomes a pipeline stage once,
 * at start; anything wrong stops start-up with one line naming the plugin and
 * its file, never a request (as Traefik's middlewares do): a priority outside
 * 300..500 (a plugin may not run before auth or the core's checks, nor after
 * the rate limit or quota), its KEYWARD_PLUGIN_CONFIG section failing its
 * TypeBox `configSchema` (naming the field), a `create` that throws.
 *
 * The core's stages (auth, budget, quota and the rest: stages/index.ts) are no
 * plugins: always on, in their fixed order. KEYWARD_PLUGINS's older values named
 * auth and quota (and budget); those names are ignored with one warning, so an
 * older configuration still starts. A file named like one of them in
 * KEYWARD_PLUGINS_DIR stops start-up: it would never run, and whoever put it
 * there meant it to replace authentication or metering.
 *
 * The first form (onRequest/onDone) is still loaded, deprecated: operators'
 * existing plugins keep working (onRequest as access at 400, onDone as log),
 * with a warning at start-up.
 */
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { KindGuard, Type, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Config } from '../../settings/config.js';
import type { Logger } from '../../log.js';
import type { MiddlewarePlugin, PluginHost, PluginModule, StageHooks } from './contracts.js';
import type { CoreStage } from './pipeline.js';

export class PluginLoadError extends Error {
  constructor(name: string, problem: string, source?: string) {
    super(`plugin ${name}${source ? ` (${source})` : ''}: ${problem}`);
    this.name = 'PluginLoadError';
  }
}

/** Where operator plugins may sit: after the core's checks (body 600), before the rate limit (250). */
export const OPERATOR_PRIORITIES = { min: 300, max: 500 } as const;
/** Where a first-form plugin's onRequest runs. */
export const LEGACY_PRIORITY = 400;

const HOOKS = ['access', 'undo', 'reattempt', 'responseHead', 'log', 'close', 'requestBody', 'responseBody'] as const;

interface Found {
  exported: unknown;
  /** The file, or the npm module's name: what error messages point at. */
  source: string;
}

/**
 * Where a plugin named `name` may sit in a folder: a file of its name, or a folder of its name holding `index`
 * (a plugin with its own package.json). `.ts`/`.mts` load as Node runs them, by stripping erasable types.
 */
const PLUGIN_FILES = ['.js', '.mjs', '.ts', '.mts'].flatMap((ext) => [ext, `/index${ext}`]);

async function importPlugin(name: string, dirs: readonly string[]): Promise<Found> {
  for (const dir of dirs) {
    for (const ext of PLUGIN_FILES) {
      const file = path.join(dir, name + ext);
      if (existsSync(file)) return { exported: (await import(pathToFileURL(file).href)).default, source: file };
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

const isClass = (fn: Function): boolean => /^class[\s{]/.test(Function.prototype.toString.call(fn));
const isModule = (x: unknown): x is PluginModule => typeof x === 'object' && x !== null && typeof (x as PluginModule).create === 'function';

/** The plugin's section of KEYWARD_PLUGIN_CONFIG, defaults applied and checked against its schema. */
function settingsFor(name: string, source: string, mod: PluginModule, section: unknown): unknown {
  if (mod.configSchema === undefined) return section ?? {};
  const schema: unknown = typeof mod.configSchema === 'function' ? mod.configSchema(Type) : mod.configSchema;
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

/** A plugin of the module form: checked, configured, created. */
async function moduleStage(name: string, { exported, source }: Found, host: PluginHost, section: unknown): Promise<CoreStage> {
  const mod = exported as PluginModule;
  if (typeof mod.name !== 'string' || mod.name === '') throw new PluginLoadError(name, '`name` must be a non-empty string', source);
  if (typeof mod.priority !== 'number' || !Number.isFinite(mod.priority)) throw new PluginLoadError(name, '`priority` must be a number', source);
  if (mod.priority < OPERATOR_PRIORITIES.min || mod.priority > OPERATOR_PRIORITIES.max) {
    throw new PluginLoadError(name, `priority ${mod.priority} is outside ${OPERATOR_PRIORITIES.min}..${OPERATOR_PRIORITIES.max} (a plugin runs after auth and the core's checks, and before the rate limit and quota)`, source);
  }
  checkBody(name, source, mod.body);
  if (mod.maxBuffer !== undefined && !(Number.isSafeInteger(mod.maxBuffer) && mod.maxBuffer >= 0)) {
    throw new PluginLoadError(name, '`maxBuffer` must be a whole number of bytes, 0 or more', source);
  }
  const settings = settingsFor(name, source, mod, section);
  let hooks: StageHooks;
  try {
    hooks = await mod.create(host, settings);
  } catch (err) {
    throw new PluginLoadError(name, `refused to start: ${(err as Error).message}`, source);
  }
  if (!hooks || typeof hooks !== 'object') throw new PluginLoadError(name, '`create` must return an object of hooks', source);
  const stage: { -readonly [K in keyof CoreStage]: CoreStage[K] } = { name: mod.name, priority: mod.priority };
  if (mod.maxBuffer !== undefined) stage.maxBuffer = mod.maxBuffer;
  if (hooks.body !== undefined) checkBody(name, source, hooks.body);
  const body = hooks.body ?? mod.body;
  if (body) stage.body = body;
  for (const hook of HOOKS) {
    const fn = hooks[hook] as unknown;
    if (fn === undefined) continue;
    if (typeof fn !== 'function') throw new PluginLoadError(name, `\`${hook}\` must be a function`, source);
    // Bound once, here: a class instance's hooks keep their `this`, with no closure per request.
    (stage as Record<string, unknown>)[hook] = fn.bind(hooks);
  }
  // A body hook's bound is declared, never assumed (0: it may change pieces, never hold one back).
  if ((stage.requestBody || stage.responseBody) && mod.maxBuffer === undefined) {
    throw new PluginLoadError(name, '`maxBuffer` (bytes its body hooks may hold back per request, 0 or more) must be declared beside `priority` with a requestBody or responseBody hook', source);
  }
  if (!stage.access && !stage.responseHead && !stage.log && !stage.requestBody && !stage.responseBody) {
    throw new PluginLoadError(name, 'a plugin needs an access, responseHead, log, requestBody or responseBody hook', source);
  }
  return stage;
}

/** A plugin of the first form (a class, factory or object with onRequest/onDone), adapted. */
async function legacyStage(name: string, { exported, source }: Found, host: PluginHost): Promise<CoreStage> {
  let plugin: unknown;
  try {
    if (typeof exported === 'function') {
      plugin = isClass(exported) ? new (exported as new (h: PluginHost) => unknown)(host) : await (exported as (h: PluginHost) => unknown)(host);
    } else {
      plugin = exported;
    }
  } catch (err) {
    throw new PluginLoadError(name, `refused to start: ${(err as Error).message}`, source);
  }
  const p = plugin as Partial<MiddlewarePlugin> | undefined;
  if (!p || typeof p !== 'object') throw new PluginLoadError(name, 'the default export must be a plugin module ({ name, priority, create }), or a class, factory or object of the first form', source);
  if (typeof p.name !== 'string' || p.name === '') throw new PluginLoadError(name, '`name` must be a non-empty string', source);
  for (const hook of ['onRequest', 'onDone', 'close'] as const) {
    if (p[hook] !== undefined && typeof p[hook] !== 'function') throw new PluginLoadError(name, `\`${hook}\` must be a function`, source);
  }
  if (!p.onRequest && !p.onDone) throw new PluginLoadError(name, 'a plugin needs an onRequest or an onDone hook', source);
  return {
    name: p.name,
    priority: LEGACY_PRIORITY,
    ...(p.onRequest ? { access: p.onRequest.bind(p) } : {}),
    ...(p.onDone ? { log: p.onDone.bind(p) } : {}),
    ...(p.close ? { close: p.close.bind(p) } : {}),
  };
}

/** Core stages that were plugins once: never loaded from a file (stages/auth.ts, budget.ts, quota.ts are the core's). */
const CORE_STAGES = ['auth', 'quota', 'budget'] as const;

/** Where plugins come from: the operator's folder (KEYWARD_PLUGINS_DIR) and the package's built-in one. */
export interface PluginDirs {
  dir: string;
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
  if (sameDir(dirs.dir, dirs.builtinDir)) return;
  let files: string[];
  try {
    files = readdirSync(dirs.dir);
  } catch {
    return; // config.ts checked the folder exists; an unreadable one fails where a plugin is looked up
  }
  for (const f of files.sort()) {
    const m = /^(.*)\.(m?js)$/i.exec(f);
    if (m && (CORE_STAGES as readonly string[]).includes(m[1]!.toLowerCase())) {
      throw new PluginLoadError(m[1]!.toLowerCase(), `KEYWARD_PLUGINS_DIR holds ${path.join(dirs.dir, f)}, named like the core stage ${m[1]!.toLowerCase()}, which is always on and which no plugin replaces; rename or remove it`);
    }
  }
}

/**
 * The configured plugins as stages, in KEYWARD_PLUGINS order (the Pipeline sorts by priority; that order
 * breaks ties), each looked up in the configured folder first, then the package's.
 */
export async function loadPlugins(config: Pick<Config, 'plugins' | 'pluginsIgnored' | 'pluginsDir' | 'builtinPluginsDir' | 'pluginSettings'>, host: PluginHost, log: Logger): Promise<CoreStage[]> {
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
  const searched = [...new Set([dirs.dir, dirs.builtinDir])];
  const stages: CoreStage[] = [];
  for (const name of names) {
    const found = await importPlugin(name, searched);
    const section = config.pluginSettings[name];
    if (isModule(found.exported)) {
      stages.push(await moduleStage(name, found, host, section));
      continue;
    }
    if (section !== undefined) throw new PluginLoadError(name, 'KEYWARD_PLUGIN_CONFIG configures it, but it has the first (onRequest/onDone) form, which takes no configuration', found.source);
    stages.push(await legacyStage(name, found, host));
    log.warn({ plugin: name, file: found.source }, `plugin ${name} has the deprecated onRequest/onDone form: it runs as access at priority ${LEGACY_PRIORITY} and log (see docs/extend/plugins.md)`);
  }
  return stages;
}
