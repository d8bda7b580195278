import test from 'ava';
import { api, mintToken } from '../support/app.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { ManualClock } from '../support/clocks.js';
import { quiet } from '../support/wait.js';

const shapes = [
  { provider: 'openai' as const, path: 'v1/chat/completions', stream: { model: 'm', stream: true, stream_options: { include_usage: true }, messages: [] }, plain: { model: 'm', messages: [] }, input: 11 },
  { provider: 'anthropic' as const, path: 'v1/messages', stream: { model: 'm', stream: true, max_tokens: 5, messages: [] }, plain: { model: 'm', max_tokens: 5, messages: [] }, input: 13 },
  { provider: 'gemini' as const, streamPath: 'v1beta/models/g:streamGenerateContent?alt=sse', path: 'v1beta/models/g:generateContent', stream: { contents: [] }, plain: { contents: [] }, input: 17 },
];

for (const shape of shapes) {
  for (const mode of ['stream', 'plain'] as const) {
    test(`usage is read from ${shape.provider} ${mode} responses and shown per token, credential and organisation`, async (t) => {
      const f = await proxyFixture(t);
      const token = await mintToken(f.app, f.org, f.credentials[shape.provider]);
      const events = 7;
      for (let i = 0; i < 2; i++) {
        const path = mode === 'stream' && 'streamPath' in shape ? shape.streamPath! : shape.path;
        const res = await fetch(f.proxyUrl(path), {
          method: 'POST',
          headers: { 'x-proxy-token': token.token, 'x-fake-events': String(events), 'content-type': 'application/json' },
          body: JSON.stringify(mode === 'stream' ? shape.stream : shape.plain),
        });
        t.is(res.status, 200);
        await res.text();
      }
      // onDone runs when the response closes.
      await quiet(f.app);
      const tok = await api(f.app, 'GET', `/v1/tokens/${token.id}`, { token: f.org.token });
      t.deepEqual(tok.body.usage, { requests: 2, input_tokens: 2 * shape.input, output_tokens: 2 * events, spend_usd: '0.00' }, 'an unpriced model spends nothing');
      const cred = await api(f.app, 'GET', `/v1/credentials/${f.credentials[shape.provider]}`, { token: f.org.token });
      t.deepEqual(cred.body.usage, { requests: 2, input_tokens: 2 * shape.input, output_tokens: 2 * events, spend_usd: '0.00' });
      const usage = await api(f.app, 'GET', '/v1/usage', { token: f.org.token });
      t.is(usage.body.proxy_requests.used, 2);
      t.deepEqual(usage.body.tokens, { input: 2 * shape.input, output: 2 * events });
    });
  }
}

test('usage is flushed to the store in the background, not per request', async (t) => {
  const timers = new ManualClock();
  const f = await proxyFixture(t, { timers });
  const res = await fetch(f.proxyUrl('v1/chat/completions'), {
    method: 'POST',
    headers: { 'x-proxy-token': f.tokens.openai.token, 'x-fake-events': '4', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [] }),
  });
  await res.text();
  await quiet(f.app);
  const store = f.app.server.container.resolve<any>((await import('../../src/symbols.js')).Symbols.UsageStore);
  t.is((await store.getUsage('tok', f.tokens.openai.id)).requests, 0, 'not written per request');
  await timers.tick(1000); // the 1 s flush
  const stored = await store.getUsage('tok', f.tokens.openai.id);
  t.deepEqual(stored, { requests: 1, inputTokens: 11, outputTokens: 4, spendMicros: 0 });
});

test('unit: usage is read whatever the chunk edges, and chunks without usage are skipped cheaply', async (t) => {
  const { UsageScanner } = await import('../../src/gateway/wire/usage-scanner.js');
  const body = Buffer.from('data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":123,"completion_tokens":4567,"total_tokens":4690}}\n\ndata: [DONE]\n\n');
  for (let cut = 1; cut < body.length; cut++) {
    const counts = { inputTokens: 0, outputTokens: 0 };
    const scanner = new UsageScanner(counts);
    scanner.scan(body.subarray(0, cut));
    scanner.scan(body.subarray(cut));
    t.deepEqual(counts, { inputTokens: 123, outputTokens: 4567 }, `cut at ${cut}`);
  }
  const counts = { inputTokens: 0, outputTokens: 0 };
  const scanner = new UsageScanner(counts);
  for (let i = 0; i < body.length; i++) scanner.scan(body.subarray(i, i + 1));
  t.deepEqual(counts, { inputTokens: 123, outputTokens: 4567 }, 'one byte at a time');
});

test('unit: usage is read whatever the chunk sizes (1–64 bytes, a seam that only completes a number), and a usage-less stream makes no string', async (t) => {
  const { UsageScanner } = await import('../../src/gateway/wire/usage-scanner.js');
  const body = Buffer.from(`${'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'.repeat(3)}data: {"choices":[],"usage":{"prompt_tokens":123,"completion_tokens":4567,"total_tokens":4690}}\n\ndata: [DONE]\n\n`);
  for (let size = 1; size <= 64; size++) {
    const counts = { inputTokens: 0, outputTokens: 0 };
    const scanner = new UsageScanner(counts);
    for (let at = 0; at < body.length; at += size) scanner.scan(body.subarray(at, at + size));
    t.deepEqual(counts, { inputTokens: 123, outputTokens: 4567 }, `chunks of ${size}`);
  }
  // The number's last digits arrive alone, after the key was already matched with its first digits.
  const counts = { inputTokens: 0, outputTokens: 0 };
  const scanner = new UsageScanner(counts);
  scanner.scan(Buffer.from('{"usage":{"prompt_tokens":12'));
  t.is(counts.inputTokens, 12);
  scanner.scan(Buffer.from('3,"completion_tokens":9}}'));
  t.deepEqual(counts, { inputTokens: 123, outputTokens: 9 });
  // A stream without any token key never turns a chunk into a string.
  const quiet = new UsageScanner({ inputTokens: 0, outputTokens: 0 });
  const toString = Buffer.prototype.toString;
  let strings = 0;
  Buffer.prototype.toString = function (this: Buffer, ...args: Parameters<Buffer['toString']>) {
    strings++;
    return toString.apply(this, args);
  } as Buffer['toString'];
  try {
    for (let i = 0; i < 100; i++) quiet.scan(Buffer.from(`data: {"choices":[{"delta":{"content":"o ken ${i}"}}]}\n\n`));
  } finally {
    Buffer.prototype.toString = toString;
  }
  t.is(strings, 0);
});
