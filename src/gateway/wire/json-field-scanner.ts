/**
 * An incremental JSON scanner over a request body's bytes that finds named
 * fields of the top-level object (`model`, `max_tokens`, nested
 * `generationConfig.maxOutputTokens`) without building the document.
 *
 * Promises: it accepts exactly the documents JSON.parse accepts whose top
 * level is an object; every byte is looked at once, whatever the chunk
 * boundaries (so it is linear); it never recurses, and nesting is bounded by
 * MAX_DEPTH; memory is a fixed few kilobytes (a key or value it captures is
 * cut at a fixed size, other strings are only stepped over). Keys are decoded
 * (`\u006dodel` is `model`) before they are compared, and only keys of the
 * top-level object (and of the objects on the way to a nested field) are
 * fields: a `"model"` inside a string or a nested object is not one.
 *
 * A field's key that appears twice in its object, or a case variant of it
 * (`Model`, `MODEL`), is a problem rather than a value: parsers disagree on
 * which one wins (most take the last; Go's encoding/json matches keys without
 * case, Kelvin sign K and long s ſ included), so the scope would check one
 * value while the provider used another. `anyKeys` are noticed at any depth,
 * except inside the value of a key `anyKeysSkip` names (at any depth: a
 * `tools` array, a nested `responseSchema`), which is stepped over for them.
 * The elements of one top-level array (`elements`: a body's `tools`) are
 * recorded as they pass, each object's named values and keys, within a fixed
 * number of elements and keys (json-fields.ts): one pass, nothing read twice.
 * Reading JSON-RPC messages, the top level may also be a batch (an array of at
 * most MESSAGES_LIMIT objects), each one's fields recorded apart; a case variant
 * of a wanted key is refused even alone (a case-folding server would take it).
 */
import { StringCapture, ELEMENT_KEYS, ELEMENTS_LIMIT, foldKey, NONE, NUMBER_LIMIT, scanPlan, isDigit, isWhitespace, MAX_DEPTH, MESSAGES_LIMIT, N_INT, N_MINUS, N_ZERO, numberNext, startsOtherValue, type ElementFacts, type ElementsFound, type ElementsWanted, type FieldNode, type FieldValue, type Frame, type ScanProblem } from './json-fields.js';

export { foldKey, MAX_DEPTH };
export type { ElementFacts, ElementsFound, ElementsWanted, FieldValue, ScanProblem };

// Scanner states.
const START = 0, VALUE = 1, ARRAY_FIRST = 2, OBJECT_FIRST = 3, KEY = 4, COLON = 5, AFTER_VALUE = 6;
const STRING = 7, ESCAPE = 8, HEX = 9, LITERAL = 10, DONE = 11, FAILED = 12;

const OBJECT = 1, ARRAY = 2;
const QUOTE = 0x22, BACKSLASH = 0x5c;
const LITERALS = { t: Buffer.from('true'), f: Buffer.from('false'), n: Buffer.from('null') };
const ESCAPES: Record<number, string> = { 0x22: '"', 0x5c: '\\', 0x2f: '/', 0x62: '\b', 0x66: '\f', 0x6e: '\n', 0x72: '\r', 0x74: '\t' };

export class JsonFieldScanner {
  /** Wanted fields found so far (dotted name → value); each is final once here. */
  readonly found = new Map<string, FieldValue>();
  readonly keysFound = new Set<string>(); // `anyKeys` seen so far (folded), at any depth: only then is every key captured
  /** Reading messages: each top-level object's (or batch element's) fields, in order, once it closed; whether it was a batch. */
  readonly messages: { readonly items: Map<string, FieldValue>[]; batch: boolean } = { items: [], batch: false };
  /** The wanted array's elements recorded so far. */
  private readonly items: ElementFacts[] = [];
  private itemsTruncated = false;
  private readonly anyKeys: ReadonlySet<string> | undefined;
  private readonly anyKeysSkip: ReadonlySet<string> | undefined;
  private skipDepth = 0; // the depth of the anyKeysSkip key whose value is being read (its keys not noticed); 0: none
  problem: ScanProblem | undefined;

  private readonly root: FieldNode;
  private readonly wanted: number;
  private state = START;
  private depth = 0;
  /** Object or array, by depth (a plain array that grows with the nesting: most bodies are a few levels deep). */
  private readonly kinds: number[] = [0];
  /** Tracked objects by depth; undefined where nothing wanted can be. */
  private readonly frames: Array<Frame | undefined> = [];

  // The key just read in a tracked object: what its value is to the scanner.
  private valueField: string | undefined;
  private valueNode: FieldNode | undefined;
  /** The wanted field whose scalar value is being read. */
  private pendingField: string | undefined;

  private stringIsKey = false; // the string being read
  /** The string being read, when it is kept. */
  private readonly captured = new StringCapture();
  private hex = 0;
  private hexDigits = 0;

  private numberText = ''; // the number or literal being read
  private literal: Buffer = LITERALS.t;
  private literalAt = 0;

  /**
   * `fields`: dotted paths from the top-level object (`generationConfig.maxOutputTokens`); `anyKeys`: keys noticed at
   * any depth (`image_url`); `elements`: the top-level array whose elements are recorded (also a field itself).
   */
  constructor(fields: readonly string[], anyKeys: readonly string[] = NONE, elements?: ElementsWanted, anyKeysSkip: readonly string[] = NONE, private readonly readsMessages = false) {
    const plan = scanPlan(fields, anyKeys, elements, anyKeysSkip);
    this.anyKeys = plan.anyKeys;
    this.anyKeysSkip = plan.anyKeysSkip;
    this.root = plan.root;
    this.wanted = plan.wanted;
  }

  /** The wanted array's elements, as far as they were recorded (final once the scan is complete). */
  get elements(): ElementsFound {
    return { items: this.items, truncated: this.itemsTruncated };
  }

  /** The top-level object has closed (only whitespace may follow). */
  get complete(): boolean {
    return this.state === DONE;
  }

  /** Every wanted field was found. */
  get allFound(): boolean {
    return this.found.size === this.wanted;
  }

  /** Reads the next bytes; false once the body is known to be refused (see `problem`). */
  write(buf: Uint8Array): boolean {
    const n = buf.length;
    let i = 0;
    while (i < n) {
      if (this.state === STRING) {
        // The hot loop: step over plain string bytes, copying them only when this string is wanted.
        const start = i;
        let c = 0;
        while (i < n) {
          c = buf[i]!;
          if (c === QUOTE || c === BACKSLASH || c < 0x20) break;
          i++;
        }
        if (this.captured.on && i > start) this.captured.bytesFrom(buf, start, i);
        if (i === n) break;
        i++;
        if (c === QUOTE) {
          if (!this.endString()) return false;
        } else if (c === BACKSLASH) this.state = ESCAPE;
        else return this.fail({ reason: 'not_json' }); // a raw control character
        continue;
      }
      const c = buf[i]!;
      switch (this.state) {
        case START:
          if (isWhitespace(c)) break;
          if (c === 0x5b && this.readsMessages && (this.messages.batch = this.open(ARRAY, undefined))) break;
          if (c !== 0x7b) return this.fail(startsOtherValue(c) ? { reason: 'not_object' } : { reason: 'not_json' });
          if (!this.open(OBJECT, this.root)) return false;
          break;
        case VALUE:
        case ARRAY_FIRST:
          if (isWhitespace(c)) break;
          if (c === 0x5d && this.state === ARRAY_FIRST) {
            this.close();
            break;
          }
          if (!this.beginValue(c)) return false;
          break;
        case OBJECT_FIRST:
        case KEY:
          if (isWhitespace(c)) break;
          if (c === 0x7d && this.state === OBJECT_FIRST) {
            this.close();
            break;
          }
          if (c !== QUOTE) return this.fail({ reason: 'not_json' });
          this.beginString(true, this.anyKeys !== undefined || this.frames[this.depth] !== undefined);
          break;
        case COLON:
          if (isWhitespace(c)) break;
          if (c !== 0x3a) return this.fail({ reason: 'not_json' });
          this.state = VALUE;
          break;
        case AFTER_VALUE:
          if (isWhitespace(c)) break;
          if (c === 0x2c) this.state = this.kinds[this.depth] === OBJECT ? KEY : VALUE;
          else if (c === (this.kinds[this.depth] === OBJECT ? 0x7d : 0x5d)) this.close();
          else return this.fail({ reason: 'not_json' });
          break;
        case ESCAPE: {
          if (c === 0x75) {
            this.state = HEX;
            this.hex = 0;
            this.hexDigits = 0;
            break;
          }
          const decoded = ESCAPES[c];
          if (decoded === undefined) return this.fail({ reason: 'not_json' });
          if (this.captured.on) this.captured.char(decoded, 2);
          this.state = STRING;
          break;
        }
        case HEX: {
          const v = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
          if (v < 0) return this.fail({ reason: 'not_json' });
          this.hex = this.hex * 16 + v;
          if (++this.hexDigits === 4) {
            // A UTF-16 code unit: a surrogate pair's two escapes make one character, as in JSON.parse.
            if (this.captured.on) this.captured.char(String.fromCharCode(this.hex), 6);
            this.state = STRING;
          }
          break;
        }
        case LITERAL:
          if (c !== this.literal[this.literalAt]) return this.fail({ reason: 'not_json' });
          if (++this.literalAt === this.literal.length) {
            this.record(this.literal === LITERALS.n ? { kind: 'null' } : { kind: 'boolean', value: this.literal === LITERALS.t });
            this.state = AFTER_VALUE;
          }
          break;
        case DONE:
          if (!isWhitespace(c)) return this.fail({ reason: 'not_json' });
          break;
        case FAILED:
          return false;
        default:
          // A number: its grammar, one byte at a time. A byte that cannot extend it ends it and is read again.
          if (!this.numberByte(c)) {
            if (this.problem) return false;
            continue;
          }
      }
      i++;
    }
    return this.problem === undefined;
  }

  /** The body ended: true when it was one whole JSON object. */
  end(): boolean {
    if (this.problem) return false;
    if (this.state !== DONE) return this.fail({ reason: 'not_json' });
    return true;
  }

  private fail(problem: ScanProblem): false {
    this.problem ??= problem;
    this.state = FAILED;
    return false;
  }

  private open(kind: number, node: FieldNode | undefined, facts?: ElementFacts): boolean {
    if (this.depth === MAX_DEPTH) return this.fail({ reason: 'too_deep', limit: MAX_DEPTH });
    this.depth++;
    this.kinds[this.depth] = kind;
    this.frames[this.depth] = node ? (facts ? { node, seen: new Set(), facts } : { node, seen: new Set() }) : undefined;
    this.state = kind === OBJECT ? OBJECT_FIRST : ARRAY_FIRST;
    return true;
  }

  private close(): void {
    if (this.readsMessages && this.frames[this.depth]?.node === this.root) {
      this.messages.items.push(new Map(this.found));
      this.found.clear();
    }
    // The skipped key's value (one deeper than the key) closes: keys count again.
    if (this.skipDepth !== 0 && this.depth <= this.skipDepth + 1) this.skipDepth = 0;
    this.frames[this.depth] = undefined;
    this.depth--;
    this.state = this.depth === 0 ? DONE : AFTER_VALUE;
  }

  /** The first byte of a value: what kind it is, and whether it is a wanted field's. */
  private beginValue(c: number): boolean {
    const field = this.valueField;
    const node = this.valueNode;
    this.valueField = undefined;
    this.valueNode = undefined;
    this.pendingField = undefined;
    if (this.readsMessages && this.depth === 1 && this.kinds[1] === ARRAY) {
      if (c !== 0x7b) return this.fail({ reason: 'not_object' });
      if (this.messages.items.length === MESSAGES_LIMIT) return this.fail({ reason: 'too_many_messages', limit: MESSAGES_LIMIT });
      return this.open(OBJECT, this.root);
    }
    if (c === 0x7b || c === 0x5b) {
      if (field !== undefined) this.record({ kind: c === 0x7b ? 'object' : 'array' }, field);
      if (c === 0x5b) return this.open(ARRAY, node?.element ? node : undefined);
      const array = this.kinds[this.depth] === ARRAY ? this.frames[this.depth] : undefined;
      if (array) return this.openElement(array.node.element!);
      // Only an object on the way to a wanted field is tracked; its keys are compared, others are stepped over.
      return this.open(OBJECT, node && node.children.size > 0 ? node : undefined);
    }
    this.pendingField = field;
    if (c === QUOTE) {
      this.beginString(false, field !== undefined);
      return true;
    }
    if (c === 0x2d || isDigit(c)) {
      this.numberText = String.fromCharCode(c);
      this.state = c === 0x2d ? N_MINUS : c === 0x30 ? N_ZERO : N_INT;
      return true;
    }
    const literal = c === 0x74 ? LITERALS.t : c === 0x66 ? LITERALS.f : c === 0x6e ? LITERALS.n : undefined;
    if (!literal) return this.fail({ reason: 'not_json' });
    this.literal = literal;
    this.literalAt = 1;
    this.state = LITERAL;
    return true;
  }

  /** An element of the recorded array: a record of its own while there is room, else the records are incomplete. */
  private openElement(node: FieldNode): boolean {
    if (this.items.length === ELEMENTS_LIMIT) {
      this.itemsTruncated = true;
      return this.open(OBJECT, undefined);
    }
    const facts: ElementFacts = { values: new Map(), keys: new Set() };
    this.items.push(facts);
    return this.open(OBJECT, node, facts);
  }

  private record(value: FieldValue, field = this.pendingField): void {
    if (field === undefined) return;
    // A value of an element being recorded is the element's; any other is a wanted field's.
    const facts = this.frames[this.depth]?.facts;
    const into = facts ? facts.values : this.found;
    if (!into.has(field)) into.set(field, value);
  }

  /** One byte of a number; false when it is not part of the number (then the number is over, or wrong). */
  private numberByte(c: number): boolean {
    const next = numberNext(this.state, c);
    if (next === -1) {
      this.fail({ reason: 'not_json' });
      return false;
    }
    if (next === 0) {
      this.record({ kind: 'number', value: this.numberText.length > NUMBER_LIMIT ? NaN : Number(this.numberText) });
      this.state = AFTER_VALUE;
      return false;
    }
    if (this.pendingField !== undefined && this.numberText.length <= NUMBER_LIMIT) this.numberText += String.fromCharCode(c);
    this.state = next;
    return true;
  }

  private beginString(isKey: boolean, capture: boolean): void {
    this.stringIsKey = isKey;
    this.captured.begin(capture);
    this.state = STRING;
  }

  /** The closing quote: a value is recorded if wanted; a key of a tracked object is compared. False on a duplicate. */
  private endString(): boolean {
    const value = this.captured.finish();
    if (!this.stringIsKey) {
      this.record({ kind: 'string', value });
      this.state = AFTER_VALUE;
      return true;
    }
    this.state = COLON;
    const frame = this.frames[this.depth];
    // A key at (or above) the skipped key's depth: the skipped value has ended.
    if (this.skipDepth !== 0 && this.depth <= this.skipDepth) this.skipDepth = 0;
    if (value === undefined) return true; // a key too long to be a wanted one
    const folded = foldKey(value);
    if (this.skipDepth === 0) {
      if (this.anyKeys?.has(folded)) this.keysFound.add(folded);
      if (this.anyKeysSkip?.has(folded)) this.skipDepth = this.depth;
    }
    if (!frame) return true; // not a tracked object
    if (frame.facts && !frame.facts.keys.has(folded)) {
      if (frame.facts.keys.size < ELEMENT_KEYS) frame.facts.keys.add(folded);
      else this.itemsTruncated = true;
    }
    const name = frame.node.folded.get(folded);
    const child = frame.node.children.get(value);
    if (name !== undefined) {
      if (frame.seen.has(folded) || (this.readsMessages && !child)) return this.fail({ reason: 'duplicate', field: name });
      frame.seen.add(folded);
    }
    this.valueField = child?.field;
    this.valueNode = child;
    return true;
  }
}
