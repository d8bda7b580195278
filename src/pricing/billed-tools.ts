/**
 * Provider-side tools (a provider file's `tools`, provider.ts BilledTool): checked
 * at load, turned into what a body scan must read to see them, and matched
 * against one request's scanned body to say what they can add to its bill.
 *
 * What a scan reads for them is fixed per process (toolScan): the top-level
 * fields any provider's tools are named or bounded by, and, of each element of
 * the body's `tools` array, its `type`, its keys and the numbers that bound its
 * uses. A body with more tools than the scan records whole is not guessed at.
 */
import { MODEL } from './model-name.js';
import { priceMicrosPerMillion } from './money.js';
import type { BilledTool } from './price-types.js';

/** The top-level array a body lists its tools in (every shipped provider's shape). */
export const TOOLS_FIELD = 'tools';

/** What a body scan must read to see these tools. */
export interface ToolScan {
  /** Top-level fields: those tools are named by or bounded by. */
  readonly fields: readonly string[];
  /** Values recorded of each element of `tools`: `type` and the fields that bound uses. */
  readonly elementValues: readonly string[];
}

/** A scanned value, as the body scan reports it. */
type Scanned = { readonly kind: string; readonly value?: unknown };

/** One element of the body's `tools`, as the scan recorded it. */
export interface ToolElement {
  readonly values: ReadonlyMap<string, Scanned>;
  /** Its keys, folded to lower case. */
  readonly keys: ReadonlySet<string>;
}

/** The body as the scan read it, for tools. */
export interface ToolFacts {
  readonly fields: ReadonlyMap<string, Scanned>;
  readonly elements?: { readonly items: readonly ToolElement[]; readonly truncated: boolean };
}

/** What a request's tools can add: none used; used and bounded (µ$ of fees, at most); or no bound. */
export type ToolBound = { readonly used: false } | { readonly used: true; readonly feeMicros: number } | { readonly used: true; readonly unbounded: string };

const NAME = /^[a-z0-9_]{1,64}$/;
/** More uses than this in one request is no real request; past it the fee is not bounded but refused. */
const MAX_USES = 100_000;
const KEY = /^[A-Za-z0-9_.]{1,64}$/;

/** Checks a provider file's `tools`; `fail` throws naming the file. */
export function validateTools(value: unknown, fail: (problem: string) => never): void {
  if (value === undefined) return;
  if (!value || typeof value !== 'object' || Array.isArray(value)) fail('`tools` must be an object of { match, perUse?, uses?, unbounded?, models? } by tool name');
  for (const [name, raw] of Object.entries(value as object)) {
    const at = `tools.${name}`;
    if (!NAME.test(name)) fail(`\`tools\` key ${JSON.stringify(name)} must be lower-case letters, digits and _`);
    const t = (raw ?? {}) as Record<string, unknown>;
    for (const k of Object.keys(t)) if (!['match', 'perUse', 'uses', 'unbounded', 'models'].includes(k)) fail(`${at}: unknown key \`${k}\``);
    const m = (t.match ?? {}) as Record<string, unknown>;
    const lists = ['toolType', 'toolKey', 'field'].filter((k) => m[k] !== undefined);
    if (typeof t.match !== 'object' || lists.length === 0 || Object.keys(m).some((k) => !['toolType', 'toolKey', 'field'].includes(k))) fail(`${at}.match must give toolType, toolKey or field`);
    for (const k of lists) {
      const list = m[k];
      if (!Array.isArray(list) || list.length === 0 || !list.every((v) => typeof v === 'string' && (k === 'toolType' ? MODEL.test(v) : KEY.test(v)))) fail(`${at}.match.${k} must list names${k === 'toolType' ? ' or prefix*' : ''}`);
    }
    if (t.unbounded !== undefined && t.unbounded !== true) fail(`${at}.unbounded must be true when given`);
    if (t.perUse !== undefined && (priceMicrosPerMillion(t.perUse) === undefined || (t.perUse as number) <= 0)) fail(`${at}.perUse must be USD per use, > 0 with at most six places`);
    const uses = t.uses as Record<string, unknown> | undefined;
    if (uses !== undefined) {
      const ok = typeof uses === 'object' && uses !== null && Object.keys(uses).length === 1
        && ((typeof uses.toolField === 'string' && KEY.test(uses.toolField) && m.field === undefined) || (typeof uses.field === 'string' && KEY.test(uses.field))
          || (Number.isSafeInteger(uses.perRequest) && (uses.perRequest as number) >= 1 && (uses.perRequest as number) <= 1000));
      if (!ok) fail(`${at}.uses must be { toolField } (with toolType or toolKey), { field } or { perRequest: 1..1000 }`);
    }
    if (t.perUse !== undefined && uses === undefined && t.unbounded === undefined) fail(`${at}: perUse needs \`uses\` (how many uses a request can bill) or \`unbounded: true\``);
    if (t.models !== undefined && !(Array.isArray(t.models) && t.models.length > 0 && t.models.every((v) => typeof v === 'string' && MODEL.test(v)))) fail(`${at}.models must list model names or prefix*`);
  }
}

/** What a body scan must read to see any of these providers' tools. */
export function toolScan(providers: Iterable<{ readonly tools?: Readonly<Record<string, BilledTool>> }>): ToolScan {
  const fields = new Set<string>();
  const values = new Set<string>(['type']);
  for (const p of providers) {
    for (const t of Object.values(p.tools ?? {})) {
      for (const f of t.match.field ?? []) fields.add(f);
      if (t.uses && 'field' in t.uses) fields.add(t.uses.field);
      if (t.uses && 'toolField' in t.uses) values.add(t.uses.toolField);
    }
  }
  return Object.freeze({ fields: Object.freeze([...fields].sort()), elementValues: Object.freeze([...values].sort()) });
}

const nameMatches = (pattern: string, name: string): boolean => (pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern);

const count = (v: Scanned | undefined): number | undefined => (v?.kind === 'number' && typeof v.value === 'number' && Number.isSafeInteger(v.value) && v.value >= 0 ? v.value : undefined);

/** Whether `v` turns a field-matched tool on: present, and not null or false. */
const present = (v: Scanned | undefined): boolean => v !== undefined && v.kind !== 'null' && !(v.kind === 'boolean' && v.value === false);

/** The elements of `tools` that ask for `tool`. */
function elementsFor(tool: BilledTool, items: readonly ToolElement[]): ToolElement[] {
  const types = tool.match.toolType ?? [];
  const keys = (tool.match.toolKey ?? []).map((k) => k.toLowerCase());
  return items.filter((e) => {
    const type = e.values.get('type');
    if (type?.kind === 'string' && typeof type.value === 'string' && types.some((p) => nameMatches(p, type.value as string))) return true;
    return keys.some((k) => e.keys.has(k));
  });
}

/** Per provider file's tools, per model: the declarations that apply (applyingTo). Models are the caller's words: bounded. */
const applyingCache = new WeakMap<Readonly<Record<string, BilledTool>>, Map<string, ReadonlyArray<readonly [string, BilledTool]>>>();
const APPLYING_MODELS_MAX = 1024;

/**
 * The declarations that apply to `model`: those without `models` and those naming it; of two with the same match,
 * the one naming the model stands in for the general one. Worked out once per provider and model (it compared every
 * pair of declarations by their JSON, on every budgeted request).
 */
function applyingTo(tools: Readonly<Record<string, BilledTool>>, model: string): ReadonlyArray<readonly [string, BilledTool]> {
  let byModel = applyingCache.get(tools);
  if (!byModel) applyingCache.set(tools, (byModel = new Map()));
  let list = byModel.get(model);
  if (!list) {
    const applying = Object.entries(tools).filter(([, t]) => !t.models || t.models.some((p) => nameMatches(p, model)));
    list = applying.filter(([name, tool]) => tool.models !== undefined
      || !applying.some(([other, t]) => other !== name && t.models !== undefined && JSON.stringify(t.match) === JSON.stringify(tool.match)));
    if (byModel.size >= APPLYING_MODELS_MAX) byModel.clear();
    byModel.set(model, list);
  }
  return list;
}

/**
 * What `tools` (a provider's declarations) can add to this request for `model`: nothing when none is used; the
 * most their fees come to; or why no bound exists (an unbounded tool, a missing `uses` number, a tools list
 * longer than the scan records whole).
 */
export function toolBound(tools: Readonly<Record<string, BilledTool>> | undefined, model: string, body: ToolFacts): ToolBound {
  if (!tools) return { used: false };
  const items = body.elements?.items ?? [];
  const applying = applyingTo(tools, model);
  // A tools list longer than the scan records whole may hide any tool: not guessed at.
  if (body.elements?.truncated) return { used: true, unbounded: 'The request lists more tools than the gateway reads whole (or a tool with too many keys): their cost cannot be bounded.' };
  let used = false;
  let fee = 0;
  for (const [name, tool] of applying) {
    const elements = elementsFor(tool, items);
    const byField = (tool.match.field ?? []).some((f) => present(body.fields.get(f)));
    if (elements.length === 0 && !byField) continue;
    used = true;
    if (tool.unbounded) return { used, unbounded: `\`${name}\` is billed by what no request field bounds.` };
    if (tool.perUse === undefined) continue;
    const uses = tool.uses!;
    let n: number | undefined;
    if ('perRequest' in uses) n = uses.perRequest;
    else if ('field' in uses) n = count(body.fields.get(uses.field));
    else {
      n = 0;
      for (const e of elements) {
        const c = count(e.values.get(uses.toolField));
        if (c === undefined) return { used, unbounded: `\`${name}\` needs \`${uses.toolField}\` in its tool definition to bound its uses.` };
        n += c;
      }
    }
    if (n === undefined) return { used, unbounded: `\`${name}\` needs the request's \`${(uses as { field: string }).field}\` to bound its uses.` };
    if (n > MAX_USES) return { used, unbounded: `\`${name}\` allows more than ${MAX_USES} uses.` };
    fee += n * priceMicrosPerMillion(tool.perUse)!;
  }
  return used ? { used, feeMicros: fee } : { used: false };
}
