/**
 * Loads the middleware plugins KEYWARD_PLUGINS names: a compiled file in the
 * plugins folder, else an npm module. Each is constructed once at start with
 * the PluginHost; a constructor that rejects its config stops start-up (as
 * Traefik's middlewares do), never a request.
 */
import { existsSync } from 'node:fs';
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

async function importPlugin(name: string, dirs: readonly string[]): Promise<unknown> {
  for (const dir of dirs) {
    for (const ext of ['.js', '.mjs']) {
      const file = path.join(dir, name + ext);
      if (existsSync(file)) return (await import(pathToFileURL(file).href)).default;
    }
  }
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

export async function loadPlugin(name: string, dirs: readonly string[], host: PluginHost): Promise<MiddlewarePlugin> {
  const exported = await importPlugin(name, dirs);
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

  /** `dirs`: the configured plugins folder first, then the package's built-in one. */
  static async load(names: readonly string[], dirs: readonly string[], host: PluginHost): Promise<MiddlewareChain> {
    if (!names.includes('auth')) throw new PluginLoadError('auth', 'KEYWARD_PLUGINS must include auth: the proxy never runs unauthenticated');
    const loaded = new Map<string, MiddlewarePlugin>();
    for (const n of names) loaded.set(n, await loadPlugin(n, dirs, host));
    const middle = names.filter((n) => n !== 'auth' && n !== 'quota').map((n) => loaded.get(n)!);
    return new MiddlewareChain(loaded.get('auth')!, middle, loaded.get('quota'));
  }
}
