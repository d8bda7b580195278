/**
 * Property: no disallowed tool call slips through a token's `tools` scope. Random JSON-RPC messages and batches
 * (tools/call of allowed and disallowed names, other methods, case variants of the method, decoy `name` and
 * `method` keys nested in arguments), random key orders, random whitespace between tokens, random `\u` escapes
 * inside keys and strings, sent whole or chunked at random sizes. An independent oracle (JSON.parse and the
 * contract's rule) says whether each body must be refused; refused bodies get JSON-RPC errors and never reach the
 * upstream, the others reach it byte for byte.
 *
 * fast-check (test/support/property.ts): one body per run, KEYWARD_PROPERTY_REQUESTS runs (default 150); a
 * failure shrinks to the smallest body that breaks it and prints its seed and path (replay:
 * KEYWARD_PROPERTY_SEED, KEYWARD_PROPERTY_PATH).
 */
import test from 'ava';
import fc from 'fast-check';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { canaryKey } from '../support/proxy-fixture.js';
import { request } from '../support/request.js';
import { startRecordingUpstream } from '../support/mcp-fake.js';
import { chance, checkProperty, envInt, maybe, weighted } from '../support/property.js';

const REQUESTS = envInt('KEYWARD_PROPERTY_REQUESTS', 150);
const allowed = (name: unknown): boolean => typeof name === 'string' && (name === 'get_issue' || name.startsWith('list_'));
const fold = (s: string): string => s.toLowerCase().replaceAll('ſ', 's');

/** The contract's rule, written apart from the gateway's: must this body be refused? */
function mustRefuse(body: string): boolean {
  const parsed = JSON.parse(body) as unknown;
  const messages = (Array.isArray(parsed) ? parsed : [parsed]) as Array<{ method?: unknown; params?: { name?: unknown } }>;
  return messages.some((m) => {
    if (typeof m.method !== 'string') return false;
    if (m.method === 'tools/call') return !allowed(m.params?.name);
    return ['tools/call', 'tools/list'].includes(fold(m.method)) && m.method !== 'tools/list';
  });
}

const NAMES = ['get_issue', 'list_issues', 'list_', 'delete_repo', 'get_issue_x', 'get_issu', '', 'GET_ISSUE', 'list', 'List_pulls'];
const METHODS = ['tools/list', 'initialize', 'ping', 'notifications/initialized', 'Tools/call', 'tools/CALL', 'resources/read'];

/** An object without its undefined members (absent keys). */
const present = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** A JSON-RPC message: a tools/call three times in ten; params nine times in ten, with decoys (a `name` and a `method` deeper than the ones that count). */
const message = fc.record({
  jsonrpc: fc.constant('2.0'),
  method: weighted([[3, fc.constant('tools/call')], [7, fc.constantFrom(...METHODS)]]),
  id: maybe(0.85, fc.oneof(fc.nat({ max: 999 }), fc.nat({ max: 999 }).map((n) => `id-${n}`))),
  params: maybe(0.9, fc.record({
    name: maybe(0.9, fc.constantFrom(...NAMES)),
    arguments: fc.record({
      q: fc.nat({ max: 39 }).map((n) => 'x'.repeat(n)),
      name: maybe(0.5, fc.constantFrom(...NAMES)),
      inner: maybe(0.3, fc.constant({ method: 'tools/call', params: { name: 'delete_repo' } })),
    }).map(present),
  }).map(present)),
}).map(present);

/** Whitespace between tokens, three times in ten. */
const ws = maybe(0.3, fc.constantFrom(' ', '\n', '\t', '  \r\n ')).map((s) => s ?? '');

/** A JSON string for `s`, with some of its characters (15 in 100) written as `\u` escapes. */
const stringText = (s: string): fc.Arbitrary<string> => {
  const chars = [...s];
  return fc.array(chance(0.15), { minLength: chars.length, maxLength: chars.length })
    .map((escaped) => `"${chars.map((c, i) => (escaped[i] ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : JSON.stringify(c).slice(1, -1))).join('')}"`);
};

/** JSON text of `v` with random key order, whitespace and `\u` escapes: what JSON.parse reads as `v`. */
function jsonText(v: unknown): fc.Arbitrary<string> {
  if (typeof v === 'string') return stringText(v);
  const joined = (parts: Array<[string, string, string]>) => parts.map(([before, x, after]) => `${before}${x}${after}`).join(',');
  if (Array.isArray(v)) {
    return fc.tuple(fc.tuple(...v.map((x) => fc.tuple(ws, jsonText(x), ws))), ws).map(([items, end]) => `[${joined(items)}${end}]`);
  }
  if (v && typeof v === 'object') {
    const members = Object.entries(v).map(([k, x]) => fc.tuple(ws, fc.tuple(stringText(k), ws, ws, jsonText(x)).map(([key, a, b, value]) => `${key}${a}:${b}${value}`), ws));
    const order = fc.shuffledSubarray([...members.keys()], { minLength: members.length, maxLength: members.length });
    return fc.tuple(order, fc.tuple(...members), ws).map(([o, texts, end]) => `{${joined(o.map((i) => texts[i]!))}${end}}`);
  }
  return fc.constant(JSON.stringify(v));
}

/** A body (one message, or four times in ten a batch of up to six) as random JSON text, sent whole or (half the time) chunked. */
const anyRequest = fc.record({
  body: weighted([[6, message], [4, fc.array(message, { minLength: 1, maxLength: 6 })]]).chain(jsonText),
  // Unbiased: fast-check's bias towards the bounds would send many bodies a byte or two per chunk, slowly.
  chunked: maybe(0.5, fc.noBias(fc.integer({ min: 1, max: 64 }))),
});

test('property: random batches, key orders, whitespace, escapes and chunk splits never slip a disallowed call through', async (t) => {
  const upstream = await startRecordingUpstream(() => ({ type: 'application/json', body: '{"jsonrpc":"2.0","id":1,"result":{}}' }));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_GITHUB_MCP: upstream.url } });
  const org = await createOrg(app);
  const tok = await mintToken(app, org, await createCredential(app, org, 'github-mcp', canaryKey('mcp')), '15m', { tools: ['get_issue', 'list_*'] });
  let sent = 0;
  let refused = 0;
  const property = fc.asyncProperty(anyRequest, async ({ body, chunked }) => {
    const expectRefused = mustRefuse(body);
    const before = upstream.started;
    const r = await request(`${app.url}/v1/proxy/mcp/`, { headers: { authorization: `Bearer ${tok.token}` }, body, ...(chunked ? { chunked } : {}) });
    sent++;
    if (r.status !== 200) throw new Error(`status ${r.status}: ${JSON.stringify(r.body)}`);
    if (expectRefused) {
      refused++;
      if (upstream.started !== before) throw new Error('a body that must be refused reached the upstream');
      const errors = Array.isArray(r.body) ? r.body : [r.body];
      if (!(errors.length > 0 && errors.every((e: { error?: { code?: number } }) => e.error?.code === -32602 || e.error?.code === -32601))) {
        throw new Error(`refused without JSON-RPC errors: ${JSON.stringify(r.body)}`);
      }
    } else {
      if (upstream.started !== before + 1) throw new Error('an allowed body was not forwarded once');
      if (upstream.requests.at(-1)!.body !== body) throw new Error(`forwarded changed: ${upstream.requests.at(-1)!.body}`);
    }
  });
  const held = await checkProperty(t, property, { numRuns: REQUESTS });
  for (const r of upstream.requests) t.false(mustRefuse(r.body), `the upstream received a body that must be refused: ${r.body}`);
  if (!held) return;
  t.log(`${refused} of ${sent} refused`);
  t.true(refused > sent / 10 && refused < sent, `both outcomes were exercised (${refused} of ${sent} refused)`);
});
