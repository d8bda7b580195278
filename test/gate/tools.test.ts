/**
 * Provider-side tools under a spend budget (src/pricing/billed-tools.ts, each provider file's `tools`): a
 * body that uses one is reserved at the model's context window for input plus the declared per-use fee
 * times the most uses the body allows, exactly (a budget of that amount fits, one micro-dollar less does
 * not); one whose cost nothing bounds is refused 400 tools_unbounded; nothing refused is forwarded. For
 * Anthropic, OpenAI (Responses and Chat Completions), Gemini, Vertex (Gemini and Claude) and Bedrock
 * (InvokeModel's Anthropic-native body). (Issue 23: a 219-byte Anthropic request with web_search was
 * reserved at ~$0.0018 and settled at $0.20 against a $0.01 budget.)
 */
import test from 'ava';
import { formatUsd } from '../../src/pricing/money.js';
import { worstCaseCost } from '../../src/pricing/prices.js';
import { billingGateway, priceOf, type BilledProvider } from '../support/billing-gateway.js';
import { SHAPE_SPECS, VERTEX_LOCATION, VERTEX_PROJECT, type StreamShape } from '../support/billing-provider.js';
import { send } from '../support/transport.js';

const MAX = 1000;

interface Case {
  label: string;
  shape: StreamShape;
  /** Merged into the shape's body. */
  extra: Record<string, unknown>;
  /** µ$ of fees the declaration allows; undefined: refused as unbounded. */
  fee?: number;
  /** Another path (and model) than the shape's. */
  path?: string;
  model?: string;
}

const VERTEX_GEMINI_3 = `v1/projects/${VERTEX_PROJECT}/locations/${VERTEX_LOCATION}/publishers/google/models/gemini-3-pro-preview:streamGenerateContent?alt=sse`;

const CASES: Case[] = [
  { label: 'Anthropic web_search with max_uses 3', shape: 'anthropic', extra: { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] }, fee: 3 * 10_000 },
  { label: 'Anthropic two web_search tools', shape: 'anthropic', extra: { tools: [{ type: 'web_search_20250305', name: 'a', max_uses: 2 }, { name: 'f', input_schema: { type: 'object' } }, { type: 'web_search_20250305', name: 'b', max_uses: 5 }] }, fee: 7 * 10_000 },
  { label: 'Anthropic web_search without max_uses', shape: 'anthropic', extra: { tools: [{ type: 'web_search_20250305', name: 'web_search' }] } },
  { label: 'Anthropic web_fetch', shape: 'anthropic', extra: { tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] }, fee: 0 },
  { label: 'Anthropic code execution', shape: 'anthropic', extra: { tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] } },
  { label: 'Anthropic MCP connector', shape: 'anthropic', extra: { mcp_servers: [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'x' }] }, fee: 0 },
  { label: 'OpenAI Responses web_search with max_tool_calls 4', shape: 'openai-responses', extra: { tools: [{ type: 'web_search' }], max_tool_calls: 4 }, fee: 4 * 25_000 },
  { label: 'OpenAI Responses web_search_preview without max_tool_calls', shape: 'openai-responses', extra: { tools: [{ type: 'web_search_preview' }] } },
  { label: 'OpenAI Responses file_search (vector_store_ids) with max_tool_calls 2', shape: 'openai-responses', extra: { tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }], max_tool_calls: 2 }, fee: 2 * 2_500 },
  { label: 'OpenAI Responses code_interpreter and web_search, max_tool_calls 3', shape: 'openai-responses', extra: { tools: [{ type: 'code_interpreter', container: { type: 'auto' } }, { type: 'web_search' }], max_tool_calls: 3 }, fee: 3 * 30_000 + 3 * 25_000 },
  { label: 'OpenAI Responses image_generation', shape: 'openai-responses', extra: { tools: [{ type: 'image_generation' }], max_tool_calls: 1 } },
  { label: 'OpenAI Chat Completions web_search_options', shape: 'openai-chat', extra: { web_search_options: {} } },
  { label: 'Gemini google_search', shape: 'gemini', extra: { tools: [{ google_search: {} }] }, fee: 35_000 },
  { label: 'Gemini googleSearch and urlContext', shape: 'gemini', extra: { tools: [{ googleSearch: {} }, { urlContext: {} }] }, fee: 35_000 },
  { label: 'Gemini codeExecution', shape: 'gemini', extra: { tools: [{ codeExecution: {} }] }, fee: 0 },
  { label: 'Gemini 3 google_search (billed per query)', shape: 'gemini', extra: { tools: [{ googleSearch: {} }] }, path: 'v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse', model: 'gemini-3-pro-preview' },
  { label: 'Vertex Gemini googleSearch', shape: 'vertex-gemini', extra: { tools: [{ googleSearch: {} }] }, fee: 35_000 },
  { label: 'Vertex Gemini retrieval', shape: 'vertex-gemini', extra: { tools: [{ retrieval: { vertexAiSearch: { datastore: 'x' } } }] } },
  { label: 'Vertex Gemini 3 googleSearch', shape: 'vertex-gemini', extra: { tools: [{ googleSearch: {} }] }, path: VERTEX_GEMINI_3, model: 'gemini-3-pro-preview' },
  { label: 'Vertex Claude web_search with max_uses 2', shape: 'vertex-anthropic', extra: { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }] }, fee: 2 * 10_000 },
  { label: 'Bedrock InvokeModel Claude web_search with max_uses 1', shape: 'bedrock-invoke', extra: { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }] }, fee: 10_000 },
];

test('a body using a provider-side tool is reserved at the context window plus its fees, exactly; one with no bound is refused tools_unbounded', async (t) => {
  const g = await billingGateway(t);
  for (const c of CASES) {
    const spec = SHAPE_SPECS[c.shape];
    const body = JSON.stringify(spec.body(MAX, c.extra));
    const path = `/v1/proxy/${c.path ?? spec.path}`;
    const price = priceOf(spec.provider as BilledProvider, c.model ?? spec.model);
    const before = g.fake.received;
    if (c.fee === undefined) {
      const tok = await g.token(spec.provider, { budget_usd: '1000' });
      const r = await send(g.apps[0]!.url, { transport: 'h1', path, headers: { 'x-proxy-token': tok.token }, body });
      t.is(r.status, 400, `${c.label}: ${r.text}`);
      t.is(r.body?.error?.code, 'tools_unbounded', c.label);
      t.is(g.fake.received, before, `${c.label}: nothing forwarded`);
      continue;
    }
    const reserved = worstCaseCost(price, price.contextWindow!, MAX) + c.fee;
    const fits = await g.token(spec.provider, { budget_usd: formatUsd(reserved) });
    const short = await g.token(spec.provider, { budget_usd: formatUsd(reserved - 1) });
    const refused = await send(g.apps[0]!.url, { transport: 'h1', path, headers: { 'x-proxy-token': short.token }, body });
    t.is(refused.status, 429, `${c.label}: one µ$ short of ${reserved} µ$: ${refused.text}`);
    t.is(refused.body?.error?.code, 'budget_exhausted');
    t.is(g.fake.received, before, `${c.label}: nothing forwarded`);
    const ok = await send(g.apps[0]!.url, { transport: 'h1', path, headers: { 'x-proxy-token': fits.token }, body });
    t.is(ok.status, 200, `${c.label}: ${reserved} µ$ fits: ${ok.text}`);
  }
});

test('without tools the bound stays the body\'s bytes; with one, a tiny budget refuses what used to pass (the issue\'s $0.01 web_search)', async (t) => {
  const g = await billingGateway(t);
  const spec = SHAPE_SPECS.anthropic;
  const tok = await g.token('anthropic', { budget_usd: '0.01' });
  const plain = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'What happened in the news today?' }] });
  t.is((await send(g.apps[0]!.url, { transport: 'h1', path: `/v1/proxy/${spec.path}`, headers: { 'x-proxy-token': tok.token }, body: plain })).status, 200, 'a plain request fits $0.01');
  const searching = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'What happened in the news today?' }], tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }] });
  const before = g.fake.received;
  for (const transport of ['h1', 'h2c'] as const) {
    const r = await send(g.apps[0]!.url, { transport, length: transport === 'h1', path: `/v1/proxy/${spec.path}`, headers: { 'x-proxy-token': tok.token }, body: searching });
    t.is(r.status, 429, `${transport}: ${r.text}`);
    t.is(r.body?.error?.code, 'budget_exhausted');
  }
  t.is(g.fake.received, before, 'nothing forwarded');
  // An unbudgeted token of an uncapped organisation is not asked about tools at all.
  const free = await g.token('anthropic');
  t.is((await send(g.apps[0]!.url, { transport: 'h1', path: `/v1/proxy/${spec.path}`, headers: { 'x-proxy-token': free.token }, body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [], tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] }) })).status, 200);
});

test('a provider file\'s tools are checked at load: a bad declaration stops start-up naming the file and the field', async (t) => {
  const { validateProvider } = await import('../../src/catalog/registry.js');
  const base = { id: 'toolco', upstream: 'https://api.toolco.test', auth: { kind: 'header', header: 'x-api-key' }, routes: [{ method: 'POST', path: 'v1/x' }] };
  const bad: Array<[unknown, RegExp]> = [
    [{ search: { match: {} } }, /tools\.search\.match must give toolType, toolKey or field/],
    [{ search: { match: { toolType: ['web search'] } } }, /tools\.search\.match\.toolType/],
    [{ search: { match: { toolType: ['web_search'] }, perUse: 0.01 } }, /perUse needs `uses`/],
    [{ search: { match: { toolType: ['web_search'] }, perUse: -1, uses: { perRequest: 1 } } }, /perUse must be USD per use/],
    [{ search: { match: { field: ['web'] }, perUse: 0.01, uses: { toolField: 'max_uses' } } }, /uses must be/],
    [{ search: { match: { toolType: ['web_search'] }, unbounded: false } }, /unbounded must be true/],
    [{ search: { match: { toolType: ['web_search'] }, colour: 'red' } }, /unknown key `colour`/],
    [{ 'Web-Search': { match: { toolType: ['x'] } } }, /must be lower-case/],
  ];
  for (const [tools, problem] of bad) {
    const err = t.throws(() => validateProvider('/x/toolco.js', { ...base, tools }));
    t.regex(err!.message, /^provider toolco\.js: /);
    t.regex(err!.message, problem, JSON.stringify(tools));
  }
  t.notThrows(() => validateProvider('/x/toolco.js', { ...base, tools: { search: { match: { toolType: ['web_search_*'] }, perUse: 0.01, uses: { toolField: 'max_uses' } } } }));
  // What the budget's scan reads for them: every shipped provider's fields and element values.
  const { toolScan } = await import('../../src/pricing/billed-tools.js');
  const providers = await Promise.all(['anthropic', 'openai', 'gemini', 'vertex', 'bedrock'].map(async (p) => (await import(`../../providers/${p}.js`)).default));
  t.deepEqual(toolScan(providers), { fields: ['max_tool_calls', 'mcp_servers', 'web_search_options'], elementValues: ['max_uses', 'type'] });
});

test('settled: a whole answer is charged its usage plus the most its tools\' uses can cost (usage counts no searches); never below what the provider bills', async (t) => {
  const { billCost } = await import('../support/billing-gateway.js');
  const { usageCost } = await import('../../src/pricing/prices.js');
  const g = await billingGateway(t);
  const spec = SHAPE_SPECS.anthropic;
  const tok = await g.token('anthropic', { budget_usd: '100' });
  for (const uses of [0, 2, 3]) {
    const id = `fee-${uses}`;
    const body = JSON.stringify(spec.body(500, { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] }));
    const r = await send(g.apps[0]!.url, { transport: 'h1', path: `/v1/proxy/${spec.path}`, headers: { 'x-proxy-token': tok.token, 'x-bill-id': id, 'x-bill-input': '5000', 'x-bill-output': '77', 'x-bill-tool-uses': String(uses) }, body });
    t.is(r.status, 200);
    const charged = await g.chargeOf(String(r.headers['x-keyward-request-id']));
    const tokens = usageCost(priceOf('anthropic', spec.model), { inputTokens: 5000, outputTokens: 77 });
    t.is(charged, tokens + 3 * 10_000, `${uses} searches billed: charged the tokens plus the three max_uses allow`);
    t.true(charged! >= billCost(g.fake.bills.get(id)!, 10_000));
  }
});
