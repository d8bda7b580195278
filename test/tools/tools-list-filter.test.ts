/**
 * The tools/list answer filter on its own (src/gateway/wire/mcp/tools-list-filter.ts): JSON and event-stream answers
 * split at every chunk size keep exactly the allowed tools (each entry whole, the name read wherever it sits in
 * the entry), other events pass unchanged, and an answer over the limit or not JSON-RPC is never sent unfiltered.
 */
import test from 'ava';
import { LIST_ANSWER_LIMIT, listFiltered, type ChunkStage } from '../../src/gateway/wire/mcp/tools-list-filter.js';
import { StreamMasker } from '../../src/gateway/wire/masking.js';

const tools = ['get_issue', 'delete_repo', 'list_issues', 'wipe', 'list_pulls'].map((name, i) => (i % 2 ? { description: `t ${name} ✓`, inputSchema: { type: 'object' }, name } : { name, description: `t ${name} ✓`, inputSchema: { type: 'object' } }));
const answer = { jsonrpc: '2.0', id: 7, result: { tools, nextCursor: 'c2' } };
const ALLOWED = ['get_issue', 'list_*'];

function run(stage: ChunkStage, bytes: Buffer, size: number): string {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) {
    const b = stage.push(bytes.subarray(i, i + size));
    if (b) out.push(b);
  }
  const last = stage.end();
  if (last) out.push(last);
  return Buffer.concat(out).toString('utf8');
}

test('a JSON answer, split anywhere: only the allowed tools, whole and in order', (t) => {
  const bytes = Buffer.from(JSON.stringify(answer));
  for (let size = 1; size <= 64; size++) {
    const got = JSON.parse(run(listFiltered(new StreamMasker([]), ALLOWED, false), bytes, size));
    t.deepEqual(got.result.tools.map((x: { name: string }) => x.name), ['get_issue', 'list_issues', 'list_pulls'], `chunks of ${size}`);
    t.deepEqual(got.result.tools[0], tools[0]);
    t.is(got.result.nextCursor, 'c2');
    t.is(got.id, 7);
  }
});

test('an event stream, split anywhere: the list event filtered, its other fields kept; other events unchanged', (t) => {
  const stream = `id: 1\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n`
    + `event: message\r\nid: 2\r\ndata: ${JSON.stringify(answer)}\r\n\r\n: a comment\n\n`;
  for (let size = 1; size <= 80; size++) {
    const out = run(listFiltered(new StreamMasker([]), ALLOWED, true), Buffer.from(stream), size);
    const events = out.split(/\r?\n\r?\n/).filter(Boolean);
    t.is(events[0], 'id: 1\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}', `chunks of ${size}`);
    t.true(events[1]!.startsWith('event: message\nid: 2\ndata: '));
    const data = JSON.parse(events[1]!.split('\n').find((l) => l.startsWith('data: '))!.slice(6));
    t.deepEqual(data.result.tools.map((x: { name: string }) => x.name), ['get_issue', 'list_issues', 'list_pulls']);
    t.is(events[2], ': a comment');
  }
});

test('masked first: a key in a tool description is masked before the filter reads it', (t) => {
  const key = 'sk-mcp-secret-0123456789';
  const bytes = Buffer.from(JSON.stringify({ ...answer, result: { tools: [{ name: 'get_issue', description: `uses ${key}` }] } }));
  const out = run(listFiltered(new StreamMasker([Buffer.from(key)]), ALLOWED, false), bytes, 5);
  t.false(out.includes(key));
  t.true(out.includes('*'.repeat(key.length)));
});

test('never unfiltered: an answer over the limit, or not JSON, becomes a JSON-RPC error', (t) => {
  const huge = Buffer.from(JSON.stringify({ ...answer, result: { tools: [...tools, { name: 'wipe', description: 'x'.repeat(2 * LIST_ANSWER_LIMIT) }] } }));
  for (const eventStream of [false, true]) {
    const bytes = eventStream ? Buffer.concat([Buffer.from('data: '), huge, Buffer.from('\n\n')]) : huge;
    const out = run(listFiltered(new StreamMasker([]), ALLOWED, eventStream), bytes, 65_536);
    t.false(out.includes('wipe') || out.includes('delete_repo'), eventStream ? 'event stream' : 'JSON');
    t.regex(out, /"code":-32603/);
  }
  const broken = run(listFiltered(new StreamMasker([]), ALLOWED, false), Buffer.from('{"result":{"tools":[{"name":"wipe"}'), 4);
  t.false(broken.includes('wipe'));
  t.regex(broken, /"code":-32603/);
});
