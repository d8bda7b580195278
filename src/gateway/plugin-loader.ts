/**
 * Loads the middleware plugins KEYWARD_PLUGINS names: a compiled file in the
 * plugins folder, else an npm module. Each is constructed once at start with
 * the PluginHost; a constructor that rejects its config stops start-up (as
 * Traefik's middlewares do), never a request. `auth` and `quota` are the
 * package's own: a file of that name in KEYWARD_PLUGINS_DIR would silently
 * replace authentication or metering, so it stops start-up instead.
 */
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MiddlewarePlugin, PluginHost } from './contracts.js';

export class PluginLoadError extends Error {
  constructor(name: string, problem: string) {
    super(`plugin ${name}: ${problem}`);
    this.name = 'PluginLoadError';
  }
}

async function importPlugin(name: string, dirs: readonly string[], npm: boolean): Promise<unknown> {
  for (const dir of dirs) {
    for (const ext of ['.js', '.mjs']) {
      const file = path.join(dir, name + ext);
      if (existsSync(file)) return (await import(pathToFileURL(file).href)).default;
    }
  }
  if (!npm) throw new PluginLoadError(name, `the built-in ${name}.js is missing from ${dirs.join(' or ')}`);
  // Not a file in the folder: an npm module, resolved from the working directory first.
  let specifier = name;
  try {
    specifier = pathToFileURL(createRequire(path.join(process.cwd(), 'noop.js')).resolve(name)).href;
  } catch { /* fall back to resolving from Keyward's own node_modules */ }
  try {
    return (await import(specifier)).default;
  } catch (err) {
    throw new PluginLoadError(name, `KEYWARD_PLUGINS names it, but there is no ${name}.js in ${dirs.join(' or ')} and no npm module of that name (${(err as Error).message.split('\n')[0]})`);
  }
}

const isClass = (fn: Function): boolean => /^class[\s{]/.test(Function.prototype.toString.call(fn));

/** `npm`: whether a name found in no folder may be an npm module (never for auth and quota). */
export async function loadPlugin(name: string, dirs: readonly string[], host: PluginHost, npm = true): Promise<MiddlewarePlugin> {
  const exported = await importPlugin(name, dirs, npm);
  let plugin: unknown;
  try {
    if (typeof exported === 'function') {
      plugin = isClass(exported) ? new (exported as new (h: PluginHost) => unknown)(host) : await (exported as (h: PluginHost) => unknown)(host);
    } else {
      plugin = exported;
    }
  } catch (err) {
    throw new PluginLoadError(name, `refused to start: ${(err as Error).message}`);
  }
  const p = plugin as Partial<MiddlewarePlugin> | undefined;
  if (!p || typeof p !== 'object') throw new PluginLoadError(name, 'the default export must be a class, a factory or a plugin object');
  if (typeof p.name !== 'string' || p.name === '') throw new PluginLoadError(name, '`name` must be a non-empty string');
  for (const hook of ['onRequest', 'onDone', 'close'] as const) {
    if (p[hook] !== undefined && typeof p[hook] !== 'function') throw new PluginLoadError(name, `\`${hook}\` must be a function`);
  }
  if (!p.onRequest && !p.onDone) throw new PluginLoadError(name, 'a plugin needs an onRequest or an onDone hook');
  return p as MiddlewarePlugin;
}

/** Plugins only the package's own folder may provide. */
const CORE_PLUGINS = ['auth', 'quota'] as const;

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

/** Refuses an operator's folder holding `auth` or `quota` (any case: some file systems ignore it), listed or not. */
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
    if (m && (CORE_PLUGINS as readonly string[]).includes(m[1]!.toLowerCase())) {
      throw new PluginLoadError(m[1]!.toLowerCase(), `KEYWARD_PLUGINS_DIR holds ${path.join(dirs.dir, f)}, which would replace the built-in ${m[1]!.toLowerCase()}; rename or remove it (the built-in one is always used)`);
    }
  }
}

/** The configured plugins in the order the core runs their request hooks: auth, the others as listed, quota. */
export class MiddlewareChain {
  constructor(
    readonly auth: MiddlewarePlugin,
    readonly middle: readonly MiddlewarePlugin[],
    readonly quota: MiddlewarePlugin | undefined,
  ) {}

  get all(): MiddlewarePlugin[] {
    return [this.auth, ...this.middle, ...(this.quota ? [this.quota] : [])];
  }

  /** Other plugins are looked up in the configured folder first, then the package's; auth and quota only in the package's. */
  static async load(names: readonly string[], dirs: PluginDirs, host: PluginHost): Promise<MiddlewareChain> {
    if (!names.includes('auth')) throw new PluginLoadError('auth', 'KEYWARD_PLUGINS must include auth: the proxy never runs unauthenticated');
    refuseCoreNames(dirs);
    const searched = [...new Set([dirs.dir, dirs.builtinDir])];
    const loaded = new Map<string, MiddlewarePlugin>();
    for (const n of names) {
      const core = (CORE_PLUGINS as readonly string[]).includes(n);
      loaded.set(n, await loadPlugin(n, core ? [dirs.builtinDir] : searched, host, !core));
    }
    const middle = names.filter((n) => n !== 'auth' && n !== 'quota').map((n) => loaded.get(n)!);
    return new MiddlewareChain(loaded.get('auth')!, middle, loaded.get('quota'));
  }
}
