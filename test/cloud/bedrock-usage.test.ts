/**
 * The Bedrock usage reader on its own: JSON (Converse's camelCase keys, InvokeModel's
 * Anthropic-native ones, the count headers) and the binary event stream, fed in
 * pieces of every awkward size so frames straddle chunk edges; a corrupt frame, a
 * truncated stream and a frame reporting an absurd length stop the reading without
 * a throw (the relay never notices) and without allocating that length; only a
 * stream whose end-of-message frame was decoded is final.
 */
import test from 'ava';
import { PROVIDER_READERS } from '../support/usage-readers.js';
import { frame } from '../support/cloud/bedrock-fake.js';

const reader = (contentType: string, headers: Record<string, string> = {}) => PROVIDER_READERS.bedrock({ status: 200, path: 'model/m/converse', headers: { 'content-type': contentType, ...headers } });
const tick = () => new Promise((r) => setImmediate(r));
const b64 = (event: unknown) => ({ bytes: Buffer.from(JSON.stringify(event)).toString('base64') });

const CONVERSE_STREAM = Buffer.concat([
  frame('messageStart', { role: 'assistant' }),
  frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'inputTokens: 999 is text, not usage' } }),
  frame('metadata', { usage: { inputTokens: 12, outputTokens: 3, totalTokens: 15, cacheReadInputTokens: 4 } }),
]);
const INVOKE_STREAM = Buffer.concat([
  frame('chunk', b64({ type: 'message_start', message: { usage: { input_tokens: 20, output_tokens: 1 } } })),
  frame('chunk', b64({ type: 'message_delta', usage: { output_tokens: 7 } })),
  frame('chunk', b64({ type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 21, outputTokenCount: 8 } })),
]);

async function feed(bytes: Buffer, size: number, type = 'application/vnd.amazon.eventstream') {
  const r = reader(type);
  for (let i = 0; i < bytes.length; i += size) {
    r.scan(bytes.subarray(i, i + size));
    await tick();
  }
  return r.end();
}

test('event stream: usage from the metadata frame and from invocationMetrics, whatever the chunk sizes', async (t) => {
  for (const size of [1, 7, 37, 100_000]) {
    // inputTokens leaves out cacheReadInputTokens: TokenUsage's input is every input token.
    // Both streams' last frames (metadata, invocationMetrics) end the message: the counts are final.
    t.deepEqual(await feed(CONVERSE_STREAM, size), { inputTokens: 16, outputTokens: 3, cachedInputTokens: 4, final: true }, `converse-stream, ${size}-byte chunks`);
    t.deepEqual(await feed(INVOKE_STREAM, size), { inputTokens: 21, outputTokens: 8, final: true }, `invoke stream, ${size}-byte chunks`);
  }
});

test('event stream: a corrupt frame, a truncation or an absurd length stop the reading quietly; what was read stands', async (t) => {
  const corrupt = Buffer.from(INVOKE_STREAM);
  const second = frame('chunk', b64({ type: 'message_start', message: { usage: { input_tokens: 20, output_tokens: 1 } } })).length;
  corrupt[second + 20] ^= 0xff; // inside the second frame: its CRC no longer matches
  t.deepEqual(await feed(corrupt, 13), { inputTokens: 20, outputTokens: 1 });

  t.deepEqual(await feed(INVOKE_STREAM.subarray(0, INVOKE_STREAM.length - 5), 50), { inputTokens: 20, outputTokens: 7 }, 'truncated: the complete frames count');

  const huge = Buffer.alloc(16);
  huge.writeUInt32BE(0xfffffff0, 0);
  const before = process.memoryUsage().arrayBuffers;
  const r = reader('application/vnd.amazon.eventstream');
  t.notThrows(() => {
    r.scan(huge);
    r.scan(CONVERSE_STREAM);
  });
  await tick();
  t.deepEqual(r.end(), { inputTokens: 0, outputTokens: 0 }, 'nothing after a frame that claims 4 GiB');
  t.true(process.memoryUsage().arrayBuffers - before < 64 * 1024 * 1024, 'the claimed length was never allocated');
});

test('JSON: Converse, Anthropic-native InvokeModel and the count headers', async (t) => {
  const converse = reader('application/json');
  converse.scan(Buffer.from('{"output":{},"usage":{"inputT'));
  converse.scan(Buffer.from('okens":12,"outputTokens":3,"totalTokens":15}}'));
  t.deepEqual(converse.end(), { inputTokens: 12, outputTokens: 3 });
  const invoke = reader('application/json');
  invoke.scan(Buffer.from('{"usage":{"input_tokens":5,"output_tokens":9,"cache_read_input_tokens":2}}'));
  // input_tokens leaves out the cache read: TokenUsage's input is every input token.
  t.deepEqual(invoke.end(), { inputTokens: 7, outputTokens: 9, cachedInputTokens: 2 });
  const headed = reader('application/json', { 'x-amzn-bedrock-input-token-count': '40', 'x-amzn-bedrock-output-token-count': '41' });
  headed.scan(Buffer.from('{"some":"model-specific body"}'));
  t.deepEqual(headed.end(), { inputTokens: 40, outputTokens: 41 });
});
