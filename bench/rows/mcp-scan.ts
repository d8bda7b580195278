/**
 * The mcp-scan row, `npm run bench -- mcp-scan`: the MCP path's own costs, in process (no server, no build): reading a tools/call body's JSON-RPC facts with the body scanner
 * (messages mode, the tools stage's fields), a batch of 16, and filtering a GitHub-sized tools/list answer
 * (100 tools, about 100 KB) as JSON and as an event stream. Prints operations per second.
 */
import { JsonFieldScanner } from '../../src/gateway/wire/json-field-scanner.js';
import { MESSAGE_FIELDS } from '../../src/gateway/wire/mcp/jsonrpc.js';
import { listFiltered } from '../../src/gateway/wire/mcp/tools-list-filter.js';
import { StreamMasker } from '../../src/gateway/wire/masking.js';

const call = (i: number) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'get_issue', arguments: { owner: 'octocat', repo: 'hello-world', issue_number: i, body: 'x'.repeat(400) } } });
const single = Buffer.from(JSON.stringify(call(1)));
const batch = Buffer.from(JSON.stringify(Array.from({ length: 16 }, (_, i) => call(i))));
const tools = Array.from({ length: 100 }, (_, i) => ({ name: `tool_${i}`, description: 'd'.repeat(300), inputSchema: { type: 'object', properties: { a: { type: 'string', description: 'p'.repeat(400) } } } }));
const list = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 2, result: { tools } }));
const sse = Buffer.concat([Buffer.from('event: message\ndata: '), list, Buffer.from('\n\n')]);

function rate(name: string, bytes: number, fn: () => void): void {
  for (let i = 0; i < 200; i++) fn();
  const n = 2000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(`${name}: ${Math.round(n / s).toLocaleString('en')} /s (${bytes} bytes, ${((n * bytes) / s / 1e6).toFixed(0)} MB/s)`);
}

export async function run(): Promise<void> {
  rate('scan one tools/call', single.length, () => new JsonFieldScanner(MESSAGE_FIELDS, [], undefined, [], true).write(single));
  rate('scan a batch of 16 calls', batch.length, () => new JsonFieldScanner(MESSAGE_FIELDS, [], undefined, [], true).write(batch));
  for (const [name, bytes, stream] of [['filter tools/list, JSON', list, false], ['filter tools/list, event stream', sse, true]] as const) {
    rate(name, bytes.length, () => {
      const f = listFiltered(new StreamMasker([Buffer.from('ghp_secretsecretsecret')]), ['tool_1*', 'tool_5'], stream);
      for (let i = 0; i < bytes.length; i += 16_384) f.push(bytes.subarray(i, i + 16_384));
      f.end();
    });
  }
}
