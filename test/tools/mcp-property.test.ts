/**
 * Property: no disallowed tool call slips through a token's `tools` scope. Random JSON-RPC messages and batches
 * (tools/call of allowed and disallowed names, other methods, case variants of the method, decoy `name` and
 * `method` keys nested in arguments), random key orders, random whitespace between tokens, random `\u` escapes
 * inside keys and strings, sent whole or chunked at random sizes. An independent oracle (JSON.parse and the
 * contract's rule) says whether each body must be refused; refused bodies get JSON-RPC errors and never reach the
 * upstream, the others reach it byte for byte. KEYWARD_PROPERTY_REQUESTS sets how many (default 150).
 */
import test from 'ava';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { canaryKey } from '../support/proxy-fixture.js';
import { send } from '../support/providers-dir.js';
import { startRecordingUpstream } from '../support/mcp-fake.js';
import { prng, type Rng } from '../support/prng.js';

const REQUESTS = Number(process.env.KEYWARD_PROPERTY_REQUESTS ?? 150);
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
const METHODS = ['tools/call', 'tools/call', 'tools/call', 'tools/list', 'initialize', 'ping', 'notifications/initialized', 'Tools/call', 'tools/CALL', 'resources/read'];

function message(rng: Rng): Record<string, unknown> {
  const m: Record<string, unknown> = { jsonrpc: '2.0', method: rng.pick(METHODS) };
  if (rng.chance(0.85)) m.id = rng.chance(0.5) ? rng.int(1000) : `id-${rng.int(1000)}`;
  if (rng.chance(0.9)) {
    const args: Record<string, unknown> = { q: 'x'.repeat(rng.int(40)) };
    // Decoys: a `name` and a `method` deeper than the ones that count.
    if (rng.chance(0.5)) args.name = rng.pick(NAMES);
    if (rng.chance(0.3)) args.inner = { method: 'tools/call', params: { name: 'delete_repo' } };
    m.params = rng.chance(0.9) ? { name: rng.pick(NAMES), arguments: args } : { arguments: args };
  }
  return m;
}

/** JSON text of `v` with random key order, whitespace and `\u` escapes: what JSON.parse reads as `v`. */
function serialise(v: unknown, rng: Rng): string {
  const ws = (): string => (rng.chance(0.3) ? rng.pick([' ', '\n', '\t', '  \r\n ']) : '');
  const str = (s: string): string => `"${[...s].map((c) => (rng.chance(0.15) ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : JSON.stringify(c).slice(1, -1))).join('')}"`;
  if (typeof v === 'string') return str(v);
  if (Array.isArray(v)) return `[${ws()}${v.map((x) => serialise(x, rng)).join(`${ws()},${ws()}`)}${ws()}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v).sort(() => rng.next() - 0.5);
    return `{${ws()}${entries.map(([k, x]) => `${str(k)}${ws()}:${ws()}${serialise(x, rng)}`).join(`${ws()},${ws()}`)}${ws()}}`;
  }
  return JSON.stringify(v);
}

test('property: random batches, key orders, whitespace, escapes and chunk splits never slip a disallowed call through', async (t) => {
  const upstream = await startRecordingUpstream(() => ({ type: 'application/json', body: '{"jsonrpc":"2.0","id":1,"result":{}}' }));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_GITHUB_MCP: upstream.url } });
  const org = await createOrg(app);
  const tok = await mintToken(app, org, await createCredential(app, org, 'github-mcp', canaryKey('mcp')), '15m', { tools: ['get_issue', 'list_*'] });
  const seed = Number(process.env.KEYWARD_PROPERTY_SEED ?? 0x6d6370);
  const rng = prng(seed);
  let refused = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const batch = rng.chance(0.4);
    const value = batch ? Array.from({ length: 1 + rng.int(6) }, () => message(rng)) : message(rng);
    const body = serialise(value, rng);
    const expectRefused = mustRefuse(body);
    const before = upstream.started;
    const r = await send(`${app.url}/v1/proxy/mcp/`, { headers: { authorization: `Bearer ${tok.token}` }, body, ...(rng.chance(0.5) ? { chunked: 1 + rng.int(64) } : {}) });
    const label = `seed ${seed} #${i}: ${body.slice(0, 300)}`;
    t.is(r.status, 200, label);
    if (expectRefused) {
      refused++;
      t.is(upstream.started, before, `refused, never forwarded: ${label}`);
      const errors = Array.isArray(r.body) ? r.body : [r.body];
      t.true(errors.length > 0 && errors.every((e: { error?: { code?: number } }) => e.error?.code === -32602 || e.error?.code === -32601), label);
    } else {
      t.is(upstream.started, before + 1, `forwarded: ${label}`);
      t.is(upstream.requests.at(-1)!.body, body, `forwarded byte for byte: ${label}`);
    }
  }
  t.true(refused > REQUESTS / 10 && refused < REQUESTS, `both outcomes were exercised (${refused} of ${REQUESTS} refused)`);
  for (const r of upstream.requests) t.false(mustRefuse(r.body), 'the upstream never received a body that must be refused');
});
