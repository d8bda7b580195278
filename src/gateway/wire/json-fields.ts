/**
 * What the JSON field scanner (json-field-scanner.ts) is asked for and what
 * it reports: the values of named fields, and a bounded record of each
 * element of one top-level array (a body's `tools`), built once into a tree
 * the scanner walks as keys go by (scanPlan: once per declaration, shared by
 * every scanner of it); and StringCapture, how a scanner keeps the string it
 * reads, bounded by CAPTURE_LIMIT.
 */

/** A field's value: scalars with their value; objects and arrays by kind only. */
export type FieldValue =
  | { readonly kind: 'string'; readonly value: string | undefined } // undefined: longer than the capture limit
  | { readonly kind: 'number'; readonly value: number } // NaN: a number longer than NUMBER_LIMIT characters
  | { readonly kind: 'boolean'; readonly value: boolean }
  | { readonly kind: 'null' | 'object' | 'array' };

export type ScanProblem =
  | { readonly reason: 'not_json' }
  | { readonly reason: 'not_object' }
  | { readonly reason: 'too_deep'; readonly limit: number }
  | { readonly reason: 'duplicate'; readonly field: string }
  | { readonly reason: 'too_many_messages'; readonly limit: number };

/**
 * The elements of one top-level array to record (`tools`): of each element object, the values of `values`
 * (`type`, `max_uses`) and its keys (folded, at most ELEMENT_KEYS). Past ELEMENTS_LIMIT elements, or an element
 * with more keys, the record says it is incomplete (`truncated`): a reader that must know every element then
 * refuses rather than guess.
 */
export interface ElementsWanted {
  readonly field: string;
  readonly values: readonly string[];
}

/** One element's record. */
export interface ElementFacts {
  readonly values: Map<string, FieldValue>;
  /** Its keys, folded (foldKey). */
  readonly keys: Set<string>;
}

/** The elements of the wanted array, as far as they were recorded. */
export interface ElementsFound {
  readonly items: readonly ElementFacts[];
  /** Some element was not recorded whole (too many elements, or too many keys in one). */
  readonly truncated: boolean;
}

/** The JSON-RPC messages of a body (one object, or a batch: a top-level array of them), each one's wanted fields. */
export interface MessagesFound {
  readonly items: readonly ReadonlyMap<string, FieldValue>[];
  readonly batch: boolean;
}

export const ELEMENTS_LIMIT = 256;
export const ELEMENT_KEYS = 16;

export const MAX_DEPTH = 256;
/**
 * Raw bytes of a key or string value the scanner keeps for comparison; a wanted key is short, so any longer key is
 * another key. Under Buffer's pool threshold (poolSize / 2 = 4096 bytes), so each scanner's scratch is a slice of a
 * shared slab, not an allocation of its own (a scanner is made per request).
 */
export const CAPTURE_LIMIT = 4000;
export const NUMBER_LIMIT = 512;
/** The most messages one JSON-RPC batch may hold when a scan reads messages (each is checked). */
export const MESSAGES_LIMIT = 1024;

export const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
export const isWhitespace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
/** A byte that starts a JSON value other than an object (array, string, number, true, false, null). */
export const startsOtherValue = (c: number): boolean => c === 0x5b || c === 0x22 || c === 0x2d || isDigit(c) || c === 0x74 || c === 0x66 || c === 0x6e;

// The scanner's number states: JSON's number grammar, one byte at a time.
export const N_MINUS = 20, N_ZERO = 21, N_INT = 22;
const N_DOT = 23, N_FRAC = 24, N_E = 25, N_E_SIGN = 26, N_EXP = 27;

/** The number state after byte `c` in `state`: -1 when `c` makes it not JSON, 0 when `c` does not extend it (it ended before). */
export function numberNext(state: number, c: number): number {
  switch (state) {
    case N_MINUS: return c === 0x30 ? N_ZERO : isDigit(c) ? N_INT : -1;
    case N_ZERO: return c === 0x2e ? N_DOT : c === 0x65 || c === 0x45 ? N_E : 0;
    case N_INT: return isDigit(c) ? N_INT : c === 0x2e ? N_DOT : c === 0x65 || c === 0x45 ? N_E : 0;
    case N_DOT: return isDigit(c) ? N_FRAC : -1;
    case N_FRAC: return isDigit(c) ? N_FRAC : c === 0x65 || c === 0x45 ? N_E : 0;
    case N_E: return c === 0x2b || c === 0x2d ? N_E_SIGN : isDigit(c) ? N_EXP : -1;
    case N_E_SIGN: return isDigit(c) ? N_EXP : -1;
    default: return isDigit(c) ? N_EXP : 0; // N_EXP
  }
}

/** How keys are compared for duplicates: without case, as Go's encoding/json matches them (K→k and ſ→s included). */
export const foldKey = (key: string): string => key.toLowerCase().replaceAll('ſ', 's');

/** One level of the wanted fields: `model` and `generationConfig` at the root; `maxOutputTokens` below it. */
export interface FieldNode {
  /** Exact key → the node below it. */
  readonly children: Map<string, FieldNode>;
  /** Folded key → the dotted name reported for a duplicate. */
  readonly folded: Map<string, string>;
  /** The dotted field this key ends, if one was asked for. */
  field?: string;
  /** This key's value is the array whose elements are recorded: the node of one element. */
  element?: FieldNode;
  /** This node is an element's: its values are the element's, not fields. */
  inElement?: boolean;
}

/** An object on the way to a wanted field (or an element being recorded): which keys matter and which it has shown. */
export interface Frame {
  readonly node: FieldNode;
  readonly seen: Set<string>;
  /** The record of the element this object is. */
  readonly facts?: ElementFacts;
}

const newNode = (): FieldNode => ({ children: new Map(), folded: new Map() });

/** The tree of `fields` (dotted paths from the top-level object) and of the wanted elements' values; with the number of fields. */
export function fieldTree(fields: readonly string[], elements: ElementsWanted | undefined): { root: FieldNode; wanted: number } {
  const root = newNode();
  const add = (from: FieldNode, path: string, prefix: string): FieldNode => {
    let node = from;
    let name = prefix;
    for (const key of path.split('.')) {
      name = name ? `${name}.${key}` : key;
      let child = node.children.get(key);
      if (!child) {
        child = newNode();
        node.children.set(key, child);
        node.folded.set(foldKey(key), name);
      }
      node = child;
    }
    return node;
  };
  const unique = new Set(fields);
  if (elements) unique.add(elements.field);
  for (const field of unique) add(root, field, '').field = field;
  if (elements) {
    const array = root.children.get(elements.field)!;
    const element = newNode();
    element.inElement = true;
    for (const key of elements.values) add(element, key, `${elements.field}[]`).field = key;
    array.element = element;
  }
  return { root, wanted: unique.size };
}

/** What a scanner walks: the field tree and the folded key sets. Read only while scanning, so shared by scanners. */
export interface ScanPlan {
  readonly root: FieldNode;
  readonly wanted: number;
  readonly anyKeys: ReadonlySet<string> | undefined;
  readonly anyKeysSkip: ReadonlySet<string> | undefined;
}

/** The default for an absent list: one array, so the plan cache knows it again. */
export const NONE: readonly string[] = Object.freeze([]);

/**
 * Plans by the declaration's arrays (the admission's unions are made once per set of readers and kept, so the same
 * arrays come back request after request): the tree is built once per declaration, not per request.
 */
const plans = new WeakMap<readonly string[], Array<{ anyKeys: readonly string[]; elements: ElementsWanted | undefined; anyKeysSkip: readonly string[]; plan: ScanPlan }>>();

export function scanPlan(fields: readonly string[], anyKeys: readonly string[], elements: ElementsWanted | undefined, anyKeysSkip: readonly string[]): ScanPlan {
  let known = plans.get(fields);
  const hit = known?.find((k) => k.anyKeys === anyKeys && k.elements === elements && k.anyKeysSkip === anyKeysSkip);
  if (hit) return hit.plan;
  const keys = anyKeys.length > 0 ? new Set(anyKeys.map(foldKey)) : undefined;
  const plan: ScanPlan = { ...fieldTree(fields, elements), anyKeys: keys, anyKeysSkip: keys && anyKeysSkip.length > 0 ? new Set(anyKeysSkip.map(foldKey)) : undefined };
  if (!known) plans.set(fields, (known = []));
  // A caller that makes its arrays per call would grow this without end: keep a few per fields array.
  if (known.length >= 8) known.shift();
  known.push({ anyKeys, elements, anyKeysSkip, plan });
  return plan;
}

/**
 * The string a scanner is reading, when it keeps it (a wanted value, a key of a tracked object): its bytes as they
 * come and its escapes as decoded, up to CAPTURE_LIMIT raw bytes; past that it is given up (no value). The buffer
 * starts at 64 bytes and grows only for a long string: at 4 kB, a body scanned per request made 4 kB of garbage each.
 */
export class StringCapture {
  /** Whether this string is kept (false once given up). */
  on = false;
  private overlong = false;
  private bytes = Buffer.allocUnsafe(64);
  private byteCount = 0;
  private rawCount = 0;
  private text = '';

  begin(on: boolean): void {
    this.on = on;
    this.overlong = false;
    this.byteCount = 0;
    this.rawCount = 0;
    this.text = '';
  }

  /** Plain bytes of the string, `buf[start..end)`. */
  bytesFrom(buf: Uint8Array, start: number, end: number): void {
    const len = end - start;
    if (this.rawCount + len > CAPTURE_LIMIT) return this.giveUp();
    this.rawCount += len;
    if (this.byteCount + len > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.min(CAPTURE_LIMIT, Math.max(2 * this.bytes.length, this.byteCount + len)));
      this.bytes.copy(grown, 0, 0, this.byteCount);
      this.bytes = grown;
    }
    // Most captures are a key or a model name: copied byte by byte rather than through a subarray view each.
    if (len <= 64) {
      const bytes = this.bytes;
      let at = this.byteCount;
      for (let j = start; j < end; j++) bytes[at++] = buf[j]!;
    } else {
      this.bytes.set(buf.subarray(start, end), this.byteCount);
    }
    this.byteCount += len;
  }

  /** A decoded escape (`rawLength`: its bytes in the body). */
  char(char: string, rawLength: number): void {
    if (this.rawCount + rawLength > CAPTURE_LIMIT) return this.giveUp();
    this.rawCount += rawLength;
    // Plain bytes so far are UTF-8; an escape is a UTF-16 unit: flush one, then append the other.
    if (this.byteCount > 0) this.text += this.bytes.toString('utf8', 0, this.byteCount);
    this.byteCount = 0;
    this.text += char;
  }

  /** The string whole at its closing quote (undefined past the limit); the capture stops. */
  finish(): string | undefined {
    const value = this.overlong ? undefined : this.text + (this.byteCount > 0 ? this.bytes.toString('utf8', 0, this.byteCount) : '');
    this.on = false;
    return value;
  }

  private giveUp(): void {
    this.on = false;
    this.overlong = true;
    this.text = '';
    this.byteCount = 0;
  }
}
