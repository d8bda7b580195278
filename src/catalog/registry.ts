/**
 * ProviderRegistry: every provider plugin file in the providers folder, loaded
 * and validated once at start (a malformed file stops start-up naming the file
 * and the field, provider-check.ts), with KEYWARD_UPSTREAM_<ID> origin overrides
 * applied. It also holds what the gateway derives from all providers at once:
 * where a key may be presented (the auth stage's token discovery) and every
 * header and query parameter that can carry one (stripped from every request,
 * whatever its provider), and every provider's prices resolved into one table
 * each (price-data.ts: a `<id>.prices.json` beside its file, or inline; a
 * family priced once in its publisher's file, taken by the platforms that sell it).
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../log.js';
import { CREDENTIAL_HEADERS } from './header-names.js';
import { checkApiVersion, ProviderLoadError, validateProvider, type Provider } from './provider-check.js';
import { toolScan, type ToolScan } from '../pricing/billed-tools.js';
import { PriceFileError } from '../pricing/price-schema.js';
import { dimensionFields } from '../pricing/price-dimensions.js';
import { resolvePriceFiles, type LoadedPriceFile, type ResolvedTables } from '../pricing/price-data.js';

export { ProviderLoadError, validateProvider, type Provider };

/** A header a proxy token may be presented in; `pattern`'s first group is the token (none: the whole value). */
export interface HeaderCarrier {
  readonly header: string;
  readonly pattern?: RegExp;
  /**
   * A provider's own `pattern` (GitHub's `Authorization: token …`): a token found only through it is taken for
   * these providers' credentials alone. Header names and schemes (`Bearer`) are every provider's.
   */
  readonly only?: readonly string[];
  /** How a refusal names this place to the caller: `Authorization: Bearer`, `x-api-key`. */
  readonly label: string;
}

/** Where a caller may present a proxy token, over every loaded provider (`X-Proxy-Token` is always accepted besides). */
export interface TokenCarriers {
  readonly headers: readonly HeaderCarrier[];
  /** Each carrier header once: a request that repeats one is ambiguous. */
  readonly headerNames: readonly string[];
  readonly query: readonly string[];
  /** Every place, as a refusal lists them: `X-Proxy-Token, Authorization: Bearer, x-api-key, …, ?key=`. */
  readonly places: string;
}

/** A header's name as callers write it in their code (the common ones capitalised, a provider's own as it documents it). */
export function headerLabel(header: string): string {
  return header === 'authorization' ? 'Authorization' : header === 'x-proxy-token' ? 'X-Proxy-Token' : header === 'sec-websocket-protocol' ? 'Sec-WebSocket-Protocol' : header;
}

/** The places most SDKs use, named first in a refusal (a stable sort keeps the rest in header order). */
const COMMON_PLACES = (label: string): number => (label === 'Authorization: Bearer' ? 2 : label === 'x-api-key' ? 1 : 0);

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class ProviderRegistry {
  /** Every query parameter any provider names as a key carrier (tokenIn, or its query auth): stripped from every request. */
  readonly keyQueryParams: readonly string[];
  /** Every header that can carry a key: the fixed credential headers plus every provider's tokenIn and auth header. */
  readonly keyHeaders: ReadonlySet<string>;
  /** Every header a plain credential field sets: never taken from the caller. */
  readonly fieldHeaders: ReadonlySet<string>;
  readonly tokenCarriers: TokenCarriers;
  /** What a body scan reads to see any provider's billed tools (billed-tools.ts). */
  readonly toolScan: ToolScan;
  /** Every body field a loaded provider's price dimensions are set by: what a capped request's scan reads (price-dimensions.ts). */
  readonly priceFields: readonly string[];
  /** Each provider's prices, resolved (its own and its families'), with where each was read. */
  readonly prices: ResolvedTables;
  private readonly byId: ReadonlyMap<string, Provider>;

  constructor(providers: readonly Provider[]) {
    const map = new Map<string, Provider>();
    for (const p of providers) {
      if (map.has(p.id)) throw new ProviderLoadError(p.id, `two provider files declare id ${JSON.stringify(p.id)}`);
      map.set(p.id, p);
    }
    this.byId = map;
    const files: LoadedPriceFile[] = providers.flatMap((p) => (p.priceTable ? [{ providerId: p.id, file: `providers/${p.priceTable.file}`, data: p.priceTable.data }] : []));
    try {
      this.prices = resolvePriceFiles(files);
    } catch (err) {
      if (err instanceof PriceFileError) throw new ProviderLoadError(err.file.replace(/^providers\//, ''), err.detail);
      throw err;
    }
    const placements = providers.flatMap((p) => p.tokenIn.map((t) => ({ ...t, provider: p.id })));
    const query = new Set<string>();
    const carriers = new Map<string, HeaderCarrier>();
    const only = new Map<string, string[]>();
    const keyHeaders = new Set(CREDENTIAL_HEADERS);
    for (const t of placements) {
      if ('query' in t) {
        query.add(t.query);
        continue;
      }
      keyHeaders.add(t.header);
      const pattern = t.pattern ?? (t.scheme ? new RegExp(`^${escapeRegex(t.scheme)} (\\S+)$`, 'i') : undefined);
      const key = `${t.header} ${pattern ? `${pattern.source}/${pattern.flags}` : ''}`;
      if (t.pattern) only.set(key, [...(only.get(key) ?? []), t.provider]);
      // A provider's own pattern is named with the providers whose SDKs send it (`Authorization (github)`).
      const label = t.scheme ? `${headerLabel(t.header)}: ${t.scheme}` : only.has(key) ? `${headerLabel(t.header)} (${only.get(key)!.join(', ')})` : headerLabel(t.header);
      carriers.set(key, Object.freeze({ header: t.header, ...(pattern ? { pattern } : {}), ...(only.has(key) ? { only: Object.freeze(only.get(key)!) } : {}), label }));
    }
    for (const p of providers) {
      if (p.auth.kind === 'header') keyHeaders.add(p.auth.header);
      if (p.auth.kind === 'query') query.add(p.auth.param);
    }
    this.keyQueryParams = Object.freeze([...query].sort());
    this.toolScan = toolScan(providers);
    this.priceFields = Object.freeze(dimensionFields(providers.map((p) => p.priceDimensions)));
    this.keyHeaders = keyHeaders;
    this.fieldHeaders = new Set(providers.flatMap((p) => p.fields.flatMap((f) => (f.header ? [f.header] : []))));
    // By header; every provider's carriers before a provider's own pattern, so `Bearer` is never taken as one provider's.
    const headers = [...carriers.values()].sort((a, b) => (a.header < b.header ? -1 : a.header > b.header ? 1 : Number(a.only !== undefined) - Number(b.only !== undefined)));
    const queryCarriers = placements.flatMap((t) => ('query' in t ? [t.query] : [])).filter((q, i, all) => all.indexOf(q) === i).sort();
    this.tokenCarriers = Object.freeze({
      headers: Object.freeze(headers),
      headerNames: Object.freeze([...new Set(headers.map((h) => h.header))]),
      query: Object.freeze(queryCarriers),
      places: [...new Set(['X-Proxy-Token', ...headers.map((h) => h.label).sort((a, b) => COMMON_PLACES(b) - COMMON_PLACES(a)), ...queryCarriers.map((q) => `?${q}=`)])].join(', '),
    });
  }

  get(id: string): Provider | undefined {
    return this.byId.get(id);
  }

  ids(): string[] {
    return [...this.byId.keys()].sort();
  }

  /**
   * The built-in providers (`builtinDir`: the package's compiled ones) and, added to them, those of `extraDir`
   * (KEYWARD_PROVIDERS_DIR: `.ts`, `.mts`, `.js` or `.mjs` files, loaded as they are: Node strips a `.ts` file's
   * types). A folder provider with a built-in's id is refused unless it declares `replaces: "<id>"`; the
   * replacement is logged. A folder that is the built-in one (or a file that is a built-in file, linked) adds nothing.
   */
  static async load(builtinDir: string, overrides: Readonly<Record<string, string>>, options: { extraDir?: string; log?: Logger } = {}): Promise<ProviderRegistry> {
    const builtins = await loadFolder(builtinDir, overrides, true);
    const builtinFiles = new Set(builtins.map((b) => b.real));
    const added = options.extraDir === undefined || sameDir(options.extraDir, builtinDir)
      ? []
      : (await loadFolder(options.extraDir, overrides, false)).filter((a) => !builtinFiles.has(a.real));
    const byId = new Map(builtins.map((b) => [b.provider.id, b.provider]));
    for (const { provider, full } of added) {
      const replaced = provider.replaces;
      if (byId.has(provider.id) && replaced !== provider.id) {
        throw new ProviderLoadError(full, `\`id\` ${JSON.stringify(provider.id)} is a built-in provider's: choose another id, or declare \`replaces: ${JSON.stringify(provider.id)}\` to take its place`, true);
      }
      if (replaced !== undefined && !byId.has(replaced)) {
        throw new ProviderLoadError(full, `\`replaces\` ${JSON.stringify(replaced)} names no built-in provider (built-in: ${[...byId.keys()].sort().join(', ')})`, true);
      }
      if (replaced !== undefined) options.log?.warn({ provider: provider.id, file: full }, `provider ${provider.id} from ${full} replaces the built-in provider ${replaced}`);
      byId.delete(provider.id);
    }
    const providers = [...byId.values(), ...added.map((a) => a.provider)];
    // An override for no loaded provider is a typo (KEYWARD_UPSTREAM_OPENIA) that would leave traffic going to the real origin.
    for (const id of Object.keys(overrides)) {
      if (!providers.some((p) => p.id === id)) {
        throw new Error(`KEYWARD_UPSTREAM_${id.toUpperCase().replace(/-/g, '_')}: no provider ${JSON.stringify(id)} is loaded (loaded: ${providers.map((p) => p.id).sort().join(', ')})`);
      }
    }
    return new ProviderRegistry(providers);
  }
}

/** Files a folder's providers are written in: TypeScript Node runs by stripping types, or JavaScript modules. */
const PROVIDER_FILE = /^(?!.*\.d\.[mc]?ts$).*\.(ts|mts|js|mjs)$/;

interface LoadedProvider {
  readonly provider: Provider;
  readonly full: string;
  /** The file's real path (a link to a built-in file is that file). */
  readonly real: string;
}

async function loadFolder(dir: string, overrides: Readonly<Record<string, string>>, builtin: boolean): Promise<LoadedProvider[]> {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => PROVIDER_FILE.test(f)).sort();
  } catch (err) {
    throw new ProviderLoadError(dir, `cannot read the providers folder (${(err as NodeJS.ErrnoException).code})`);
  }
  if (builtin && files.length === 0) throw new ProviderLoadError(dir, 'the providers folder holds no .js files');
  const loaded: LoadedProvider[] = [];
  for (const f of files) {
    const full = path.join(dir, f);
    let provider: Provider;
    try {
      let mod: { default?: unknown };
      try {
        mod = await import(pathToFileURL(full).href);
      } catch (err) {
        throw new ProviderLoadError(full, `failed to load (${(err as Error).message.split('\n')[0]})`);
      }
      checkApiVersion((mod.default as { apiVersion?: unknown } | undefined)?.apiVersion, (problem) => {
        throw new ProviderLoadError(full, problem);
      });
      const id = (mod.default as { id?: unknown } | undefined)?.id;
      provider = validateProvider(full, mod.default, typeof id === 'string' ? overrides[id] : undefined, priceFileBeside(full));
    } catch (err) {
      // A folder's file is named by its whole path: the operator's folder may hold files of any name.
      if (!builtin && err instanceof ProviderLoadError) throw new ProviderLoadError(full, err.problem, true);
      throw err;
    }
    loaded.push({ provider, full, real: realPath(full) });
  }
  return loaded;
}

const realPath = (file: string): string => {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
};

const sameDir = (a: string, b: string): boolean => realPath(a) === realPath(b);

/** The `<name>.prices.json` beside a provider file `<name>.js`, parsed, if there is one. */
function priceFileBeside(full: string): { name: string; json: unknown } | undefined {
  const file = full.replace(/\.(m?ts|m?js)$/, '.prices.json');
  if (!existsSync(file)) return undefined;
  const name = path.basename(file);
  try {
    return { name, json: JSON.parse(readFileSync(file, 'utf8')) };
  } catch (err) {
    throw new ProviderLoadError(full, `${name} is not JSON (${(err as Error).message})`);
  }
}
