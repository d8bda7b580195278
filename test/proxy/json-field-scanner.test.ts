/**
 * The streaming JSON field scanner (src/gateway/wire/json-field-scanner.ts) on its
 * own: every document is fed whole, split at every byte position, and one
 * byte at a time, and must give the same answer each way; validity agrees
 * with JSON.parse; only top-level keys (decoded) are fields; duplicates and
 * case variants of a wanted key are refused; nesting is bounded without
 * recursion.
 */
import test, { type ExecutionContext } from 'ava';
import { JsonFieldScanner, MAX_DEPTH, type FieldValue } from '../../src/gateway/wire/json-field-scanner.js';

const FIELDS = ['model', 'max_tokens', 'max_completion_tokens', 'max_output_tokens', 'generationConfig.maxOutputTokens'];

interface Outcome {
  ok: boolean;
  problem: string | undefined;
  found: Record<string, FieldValue>;
}

function feed(chunks: Buffer[], fields = FIELDS): Outcome {
  const s = new JsonFieldScanner(fields);
  for (const c of chunks) if (!s.write(c)) break;
  const ok = s.problem === undefined && s.end();
  const problem = s.problem ? (s.problem.reason === 'duplicate' ? `duplicate:${s.problem.field}` : s.problem.reason) : undefined;
  return { ok, problem, found: Object.fromEntries(s.found) };
}

/** Whole, at every split point, and byte by byte: all must agree with the whole. */
function scanAllWays(t: ExecutionContext, text: string | Buffer, fields = FIELDS): Outcome {
  const buf = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const whole = feed([buf], fields);
  const label = buf.toString().slice(0, 80);
  for (let i = 0; i <= buf.length; i++) {
    const split = feed([buf.subarray(0, i), buf.subarray(i)], fields);
    if (JSON.stringify(split) !== JSON.stringify(whole)) {
      t.deepEqual(split, whole, `${label} split at ${i}`);
      return whole;
    }
  }
  const bytes = feed([...buf].map((b) => Buffer.from([b])), fields);
  t.deepEqual(bytes, whole, `${label} byte by byte`);
  return whole;
}

/** What JSON.parse says about the document and the wanted top-level fields. */
function reference(text: string): { valid: boolean; object: boolean; found: Record<string, FieldValue> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { valid: false, object: false, found: {} };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { valid: true, object: false, found: {} };
  const found: Record<string, FieldValue> = {};
  for (const field of FIELDS) {
    let v: unknown = parsed;
    for (const k of field.split('.')) v = v !== null && typeof v === 'object' && !Array.isArray(v) && Object.hasOwn(v, k) ? (v as Record<string, unknown>)[k] : undefined;
    if (v === undefined) {
      // A key present with a nested miss is not found; a key absent is not found.
      continue;
    }
    found[field] = typeof v === 'string' ? { kind: 'string', value: v }
      : typeof v === 'number' ? { kind: 'number', value: v }
        : typeof v === 'boolean' ? { kind: 'boolean', value: v }
          : v === null ? { kind: 'null' } : Array.isArray(v) ? { kind: 'array' } : { kind: 'object' };
  }
  return { valid: true, object: true, found };
}

const VALID = [
  '{}',
  ' \t\r\n{ } \n',
  '{"model":"gpt-4o"}',
  '{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o","stream":true}',
  '{ "model" : "gpt-4o" , "max_tokens" : 1024 }',
  '{"model":"ünïcode ✓ 模型 😀","max_completion_tokens":0}',
  '{"model":"a\\"b\\\\c\\/d\\b\\f\\n\\r\\t","max_output_tokens":-0.5e+10}',
  '{"model":"\\ud83d\\ude00 \\u00e9\\u0000"}',
  '{"\\u006dodel":"escaped key"}',
  '{"mod\\u0065l":"escaped in the middle","max_tok\\u0065ns":7}',
  '{"model":null,"max_tokens":true}',
  '{"model":false,"max_tokens":[1,2,{"x":null}]}',
  '{"model":{"name":"gpt-4o"},"max_tokens":{"a":[]}}',
  '{"model":["gpt-4o"]}',
  '{"model":12.5e-3}',
  '{"max_tokens":1E3,"max_completion_tokens":1e+2,"max_output_tokens":0.0}',
  '{"generationConfig":{"temperature":0.2,"maxOutputTokens":256},"contents":[]}',
  '{"generationConfig":{"maxOutputTokens":{"nested":"object"}}}',
  '{"generationConfig":[{"maxOutputTokens":5}]}',
  '{"generationConfig":"not an object"}',
  '{"contents":[{"generationConfig":{"maxOutputTokens":9}}],"generationConfig":{}}',
  '{"a":{"model":"nested"},"b":[{"model":"in an array"}]}',
  '{"text":"\\"model\\":\\"quoted\\"","note":"{\\"model\\":\\"x\\"}"}',
  '{"a":"model","model":"b"}',
  '{"":"empty key","x":[[[[[]]]]],"y":{"z":{"w":{}}}}',
  '{"a":[true,false,null,-1,0,1.5,"s",{},[]]}',
  '{"models":"not model","model_":"nor this","mode":"nor this","model":"this"}',
  '{"big":123456789012345678901234567890,"max_tokens":9007199254740993}',
  '{"raw\u00e9":"utf-8 key","model":"m"}',
  '{"generationConfig.maxOutputTokens":5}',
];

const INVALID = [
  '', ' ', '{', '}', '{"model":"a"', '{"model":"a",', '{"model":}', '{"model" "a"}', '{model:"a"}', "{'model':'a'}",
  '{"a":01}', '{"a":1.}', '{"a":-}', '{"a":.5}', '{"a":1e}', '{"a":1e+}', '{"a":+1}', '{"a":--1}', '{"a":0x10}',
  '{"a":tru}', '{"a":truex}', '{"a":nul}', '{"a":True}', '{"a":NaN}', '{"a":Infinity}', '{"a":undefined}',
  '{"a":"\u0001"}', '{"a":"line\nbreak"}', '{"a":"\\q"}', '{"a":"\\u12G4"}', '{"a":"\\u12"}', '{"a":"\\x41"}',
  '{,}', '{"a":1,}', '{"a":1 "b":2}', '{"a":1}}', '{"a":1} x', '{"a":1}{"b":2}', '{"a":[1,]}', '{"a":[,1]}', '{"a":[1 2]}',
  '{"a":[}', '{"a":{]}', '{"a":1]', '{"a":[1}', '\ufeff{"a":1}', '{"a":1}\u00a0', '{"a"\u00a0:1}', '{"a":"unterminated}',
  '{"model":"gpt-4o"} ,',
];

const NOT_OBJECTS = ['[]', '[{"model":"a"}]', '"model"', '42', '-1', 'true', 'false', 'null', ' [1] '];

test('valid objects: accepted at every split, and the wanted top-level fields are what JSON.parse sees', (t) => {
  for (const text of VALID) {
    const ref = reference(text);
    t.true(ref.valid && ref.object, `reference parses ${text}`);
    const got = scanAllWays(t, text);
    t.true(got.ok, `${text}: ${got.problem}`);
    t.deepEqual(got.found, ref.found, text);
  }
});

test('invalid JSON: refused as not_json at every split, as JSON.parse refuses it', (t) => {
  for (const text of INVALID) {
    t.false(reference(text).valid, `JSON.parse refuses ${JSON.stringify(text)}`);
    const got = scanAllWays(t, text);
    t.false(got.ok, JSON.stringify(text));
    t.is(got.problem, 'not_json', JSON.stringify(text));
  }
});

test('JSON whose top level is not an object is refused as not_object', (t) => {
  for (const text of NOT_OBJECTS) {
    t.true(reference(text).valid);
    const got = scanAllWays(t, text);
    t.false(got.ok, text);
    t.is(got.problem, 'not_object', text);
  }
});

test('a wanted key twice, or a case variant of it, is a duplicate; other keys may repeat', (t) => {
  const cases: Array<[string, string]> = [
    ['{"model":"a","model":"b"}', 'model'],
    ['{"model":"a","Model":"b"}', 'model'],
    ['{"MODEL":"a","model":"b"}', 'model'],
    ['{"Model":"a","mOdEl":"b"}', 'model'],
    ['{"model":"a","\\u004dodel":"b"}', 'model'],
    ['{"model":"a","\\u006dodel":"b"}', 'model'],
    ['{"model":"a","x":{"y":[1,2,3]},"model":"a"}', 'model'],
    ['{"max_tokens":1,"max_tokens":100000}', 'max_tokens'],
    // Go's encoding/json folds the Kelvin sign to k and long s to s.
    ['{"max_tokens":1,"max_to\u212Aens":100000}', 'max_tokens'],
    ['{"max_output_tokens":1,"max_output_token\u017F":100000}', 'max_output_tokens'],
    ['{"generationConfig":{"maxOutputTokens":1,"maxoutputtokens":9}}', 'generationConfig.maxOutputTokens'],
    ['{"generationConfig":{},"GenerationConfig":{"maxOutputTokens":9}}', 'generationConfig'],
  ];
  for (const [text, field] of cases) {
    const got = scanAllWays(t, text);
    t.false(got.ok, text);
    t.is(got.problem, `duplicate:${field}`, text);
  }
  // Repeats that are no wanted key, or wanted keys in nested objects, are not the scanner's business.
  for (const text of ['{"a":1,"a":2,"model":"m"}', '{"x":{"model":"a","model":"b"},"model":"m"}', '{"messages":[{"model":"a"},{"Model":"b"}],"model":"m"}']) {
    const got = scanAllWays(t, text);
    t.true(got.ok, text);
    t.deepEqual(got.found.model, { kind: 'string', value: 'm' }, text);
  }
  // Only the fields asked for are compared: with `model` alone wanted, a repeated max_tokens passes.
  const modelOnly = scanAllWays(t, '{"model":"m","max_tokens":1,"max_tokens":2}', ['model']);
  t.true(modelOnly.ok);
  t.deepEqual(modelOnly.found, { model: { kind: 'string', value: 'm' } });
});

test('a case variant alone is not the field (the scope then sees no model)', (t) => {
  for (const text of ['{"Model":"gpt-4o"}', '{"MODEL":"gpt-4o"}', '{"\\u004dodel":"gpt-4o"}']) {
    const got = scanAllWays(t, text);
    t.true(got.ok, text);
    t.deepEqual(got.found, {}, text);
  }
});

test('the decision: allFound the moment the last wanted value ends, complete when the top-level object closes', (t) => {
  const s = new JsonFieldScanner(['model']);
  t.true(s.write(Buffer.from('{"messages":[{"model":"no"}],"model":"gpt')));
  t.false(s.allFound, 'a string value is not known until its closing quote');
  t.true(s.write(Buffer.from('-4o"')));
  t.true(s.allFound);
  t.false(s.complete);
  t.deepEqual(s.found.get('model'), { kind: 'string', value: 'gpt-4o' });
  t.true(s.write(Buffer.from(',"x":1')));
  t.false(s.write(Buffer.from(',"Model":"other"}')), 'the scanner keeps watching after the decision');
  t.deepEqual(s.problem, { reason: 'duplicate', field: 'model' });

  const n = new JsonFieldScanner(['max_tokens']);
  t.true(n.write(Buffer.from('{"max_tokens":12')));
  t.false(n.allFound, 'a number may go on in the next chunk');
  t.true(n.write(Buffer.from('34 ')));
  t.deepEqual(n.found.get('max_tokens'), { kind: 'number', value: 1234 });
  t.true(n.write(Buffer.from('}')));
  t.true(n.complete);
  t.true(n.end());
});

test('nesting is bounded without recursion: MAX_DEPTH levels pass, one more is too_deep, a million brackets cost nothing', (t) => {
  const at = (depth: number) => `{"a":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)},"model":"m"}`;
  t.true(feed([Buffer.from(at(MAX_DEPTH))]).ok);
  t.is(feed([Buffer.from(at(MAX_DEPTH + 1))]).problem, 'too_deep');
  const deepObjects = `{${'"a":{'.repeat(MAX_DEPTH)}}`;
  t.is(feed([Buffer.from(deepObjects)]).problem, 'too_deep');
  const s = new JsonFieldScanner(FIELDS);
  t.false(s.write(Buffer.from(`{"a":${'['.repeat(1_000_000)}`)));
  t.deepEqual(s.problem, { reason: 'too_deep', limit: MAX_DEPTH });
});

test('values up to the capture limit are captured whole, however the body is cut (the capture buffer grows as they come)', (t) => {
  // Multi-byte characters, escapes and plain bytes (3,900 characters are 3,985 raw bytes, under the 4,000 limit), cut
  // every 1 to 97 bytes: the buffer starts small and grows mid-value.
  for (const length of [63, 64, 65, 200, 1000, 3900]) {
    const value = Array.from({ length }, (_, i) => (i % 97 === 0 ? 'é' : i % 89 === 0 ? '\n' : String.fromCharCode(97 + (i % 26)))).join('');
    const body = Buffer.from(JSON.stringify({ pad: 'p', model: value }));
    for (const size of [1, 7, 64, 97, body.length]) {
      const chunks: Buffer[] = [];
      for (let at = 0; at < body.length; at += size) chunks.push(body.subarray(at, at + size));
      const out = feed(chunks);
      t.true(out.ok, `${length}/${size}`);
      t.deepEqual(out.found.model, { kind: 'string', value }, `${length} chars in chunks of ${size}`);
    }
  }
});

test('long values: a model over the capture limit is a string without a value; long keys and strings elsewhere are stepped over', (t) => {
  const long = 'x'.repeat(10_000);
  t.deepEqual(feed([Buffer.from(`{"model":"${long}"}`)]).found, { model: { kind: 'string', value: undefined } });
  t.deepEqual(feed([Buffer.from(`{"${long}":1,"model":"m","pad":"${long}"}`)]).found, { model: { kind: 'string', value: 'm' } });
  const got = feed([Buffer.from(`{"max_tokens":${'9'.repeat(1000)}}`)]);
  t.true(got.ok);
  t.true(Number.isNaN((got.found.max_tokens as { value: number }).value));
});

test('random documents agree with JSON.parse at every split point', (t) => {
  let seed = 0x5eed;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const ws = () => pick(['', '', ' ', '\n  ', '\t']);
  const keyText = (k: string) => [...k].map((ch) => (rand() < 0.15 ? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}` : ch === '"' ? '\\"' : ch)).join('');
  const scalar = () => pick([() => JSON.stringify(pick(['gpt-4o', 'a "quoted" model', 'ü✓', '{"model":"x"}', ''])), () => String(Math.floor(rand() * 5000)), () => pick(['true', 'false', 'null', '-1.5e3', '0'])])();
  const value = (depth: number): string => {
    const r = rand();
    if (depth > 3 || r < 0.5) return scalar();
    if (r < 0.75) return `[${ws()}${Array.from({ length: Math.floor(rand() * 3) }, () => value(depth + 1)).join(`${ws()},${ws()}`)}${ws()}]`;
    return object(depth + 1, false);
  };
  const object = (depth: number, top: boolean): string => {
    const keys = ['messages', 'stream', 'temperature', ...(top || rand() < 0.3 ? ['model', 'max_tokens', 'generationConfig', 'maxOutputTokens'] : [])];
    const chosen = [...new Set(Array.from({ length: Math.floor(rand() * 5) }, () => pick(keys)))];
    const entries = chosen.map((k) => `${ws()}"${keyText(k)}"${ws()}:${ws()}${k === 'generationConfig' && rand() < 0.7 ? object(depth + 1, true) : value(depth)}${ws()}`);
    return `{${entries.join(',')}}`;
  };
  for (let i = 0; i < 300; i++) {
    const text = ws() + object(0, true) + ws();
    const ref = reference(text);
    t.true(ref.valid, text);
    const got = scanAllWays(t, text);
    t.true(got.ok, `${text}: ${got.problem}`);
    t.deepEqual(got.found, ref.found, text);
  }
});

test('anyKeys with anyKeysSkip: the keys noticed are exactly those outside the skipped keys\' values, as a walk of JSON.parse\'s result finds them, at every split point', (t) => {
  const ANY = ['url', 'image_url', 'source'];
  const SKIP = ['tools', 'parameters'];
  let seed = 0x5c1b;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const value = (depth: number): string => {
    const r = rand();
    if (depth > 4 || r < 0.35) return pick(['1', '"url"', 'null', '"x"']);
    if (r < 0.6) return `[${Array.from({ length: Math.floor(rand() * 3) }, () => value(depth + 1)).join(',')}]`;
    const keys = [...new Set(Array.from({ length: Math.floor(rand() * 4) }, () => pick([...ANY, ...SKIP, 'content', 'type', 'Url'])))];
    return `{${keys.map((k) => `"${k}":${value(depth + 1)}`).join(',')}}`;
  };
  const walk = (v: unknown, out: Set<string>): void => {
    if (Array.isArray(v)) for (const x of v) walk(x, out);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        const folded = k.toLowerCase();
        if (ANY.includes(folded)) out.add(folded);
        if (!SKIP.includes(folded)) walk(x, out);
      }
    }
  };
  let skippedSome = 0;
  for (let i = 0; i < 400; i++) {
    const text = `{"model":"m","messages":${value(1)},"tools":${value(1)},"z":${value(1)}}`;
    const expected = new Set<string>();
    walk(JSON.parse(text), expected);
    const whole = new JsonFieldScanner(['model'], ANY, undefined, SKIP);
    whole.write(Buffer.from(text));
    t.true(whole.end(), text);
    t.deepEqual([...whole.keysFound].sort(), [...expected].sort(), text);
    const unskipped = new JsonFieldScanner(['model'], ANY);
    unskipped.write(Buffer.from(text));
    unskipped.end();
    if (unskipped.keysFound.size > whole.keysFound.size) skippedSome++;
    const buf = Buffer.from(text);
    const at = Math.floor(rand() * buf.length);
    const split = new JsonFieldScanner(['model'], ANY, undefined, SKIP);
    split.write(buf.subarray(0, at));
    split.write(buf.subarray(at));
    split.end();
    t.deepEqual([...split.keysFound].sort(), [...expected].sort(), `${text} split at ${at}`);
  }
  t.true(skippedSome > 20, `the skip changed the answer in ${skippedSome} documents`);
});
