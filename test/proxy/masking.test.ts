import test from 'ava';
import { randomInt } from 'node:crypto';
import { StreamMasker, maskAll, maskString, partialKeyAtEnd } from '../../src/gateway/wire/masking.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { request } from '../support/request.js';

async function runMasker(key: string, pieces: Buffer[]): Promise<{ out: string; emitted: number[] }> {
  const m = new StreamMasker(Buffer.from(key));
  const emitted: number[] = [];
  const chunks: Buffer[] = [];
  for (const chunk of [...pieces.map((p) => m.push(p)), m.end()]) {
    if (chunk === undefined) continue;
    chunks.push(chunk);
    emitted.push(chunk.length);
  }
  return { out: Buffer.concat(chunks).toString(), emitted };
}

test('unit: the masker replaces the key across every possible chunking and keeps the length', async (t) => {
  const key = 'sk-test-0123456789abcdef';
  const text = `a${key}b ${key.slice(0, 10)} ${key}${key} sk-test-012 end ${key}`;
  const expected = text.split(key).join('*'.repeat(key.length));
  for (let trial = 0; trial < 300; trial++) {
    const pieces: Buffer[] = [];
    let at = 0;
    while (at < text.length) {
      const n = randomInt(1, 9);
      pieces.push(Buffer.from(text.slice(at, at + n)));
      at += n;
    }
    const { out } = await runMasker(key, pieces);
    t.is(out, expected);
    t.is(out.length, text.length);
  }
});

test('unit: every secret of a credential is masked, across every chunking, even where two overlap', (t) => {
  // The end of one secret is the start of the other: masking one first must not hide the other from the scan.
  const id = 'kid_ABCDEF01';
  const secret = 'EF01-secret-xyz';
  const text = `x ${id}-secret-xyz y ${secret} z ${id} ${'kid_ABC'} EF01-sec ${secret}${id}`;
  const expected = text.replace(/kid_ABCDEF01-secret-xyz/, '*'.repeat(id.length + 11))
    .split(secret).join('*'.repeat(secret.length)).split(id).join('*'.repeat(id.length));
  t.is(maskString(text, [id, secret]), expected);
  t.is(maskString(text, [secret, id]), expected);
  for (let trial = 0; trial < 300; trial++) {
    const m = new StreamMasker([Buffer.from(id), Buffer.from(secret)]);
    const out: Buffer[] = [];
    for (let at = 0; at < text.length;) {
      const n = randomInt(1, 7);
      const chunk = m.push(Buffer.from(text.slice(at, at + n)));
      if (chunk) out.push(chunk);
      at += n;
    }
    const rest = m.end();
    if (rest) out.push(rest);
    t.is(Buffer.concat(out).toString(), expected);
  }
});

test('unit: the masker holds back nothing when no key prefix ends a chunk', async (t) => {
  const { emitted } = await runMasker('sk-secret-123456', [Buffer.from('data: {"a":1}\n\n'), Buffer.from('data: {"b":2}\n\n')]);
  t.deepEqual(emitted, [15, 15]);
  t.is(partialKeyAtEnd(Buffer.from('xx sk-se'), Buffer.from('sk-secret')), 5);
  t.is(partialKeyAtEnd(Buffer.from('xx s'), Buffer.from('sk-secret')), 1);
  t.is(partialKeyAtEnd(Buffer.from('xx k'), Buffer.from('sk-secret')), 0);
  const original = Buffer.from('a KEY b');
  const masked = maskAll(original, Buffer.from('KEY'));
  t.is(masked.toString(), 'a *** b');
  t.is(original.toString(), 'a KEY b', 'the input buffer is not modified');
});

for (const mode of ['json', 'stream'] as const) {
  test(`an upstream echoing the key has it masked (${mode}), headers included, content-length true`, async (t) => {
    const f = await proxyFixture(t);
    for (const provider of ['openai', 'anthropic', 'gemini'] as const) {
      const path = provider === 'openai' ? 'v1/chat/completions' : provider === 'anthropic' ? 'v1/messages' : 'v1beta/models/g:generateContent';
      const res = await fetch(f.proxyUrl(path), {
        method: 'POST',
        headers: { 'x-proxy-token': f.tokens[provider].token, 'x-fake-echo': mode === 'json' ? '1' : 'stream', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm' }),
      });
      const text = await res.text();
      const key = f.keys[provider];
      t.is(res.status, 200);
      t.false(text.includes(key), `${provider}: key in body`);
      t.true(text.includes('*'.repeat(key.length)), `${provider}: masked form present`);
      for (const [name, value] of res.headers) t.false(value.includes(key), `${provider}: key in header ${name}`);
      const echoed = [...res.headers].find(([n]) => n.startsWith('x-echo-'));
      t.truthy(echoed, 'the upstream did echo a credential header');
      t.true(echoed![1].includes('*'.repeat(key.length)));
      if (mode === 'json') t.is(Number(res.headers.get('content-length')), Buffer.byteLength(text));
    }
  });
}

test('a key split across upstream writes one byte at a time is still masked', async (t) => {
  const f = await proxyFixture(t);
  f.fake.handler = async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const payload = `data: {"leak":"${f.keys.openai}"}\n\n`;
    for (const ch of payload) {
      res.write(ch);
      await new Promise((r) => setImmediate(r));
    }
    res.end();
  };
  const { text } = await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token }, body: '{"model":"m","stream":true}' });
  t.is(text, `data: {"leak":"${'*'.repeat(f.keys.openai.length)}"}\n\n`);
});

test('an upstream that compresses despite identity is decompressed, so its echoed key is still masked', async (t) => {
  const f = await proxyFixture(t);
  const { gzipSync, brotliCompressSync } = await import('node:zlib');
  for (const [encoding, compress] of [['gzip', gzipSync], ['br', brotliCompressSync]] as const) {
    f.fake.handler = (_req, res) => {
      const body = compress(Buffer.from(JSON.stringify({ leaked: f.keys.openai, n: 1 })));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding, 'content-length': String(body.length) });
      res.end(body);
    };
    const res = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } });
    t.is(res.status, 200);
    t.is(res.headers.get('content-encoding'), null, `${encoding}: the caller gets identity bytes`);
    const text = await res.text();
    t.deepEqual(JSON.parse(text), { leaked: '*'.repeat(f.keys.openai.length), n: 1 });
  }
  f.fake.handler = (_req, res) => {
    res.writeHead(200, { 'content-encoding': 'compress', 'content-length': '3' });
    res.end('abc');
  };
  const refused = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } });
  t.is(refused.status, 502, 'an encoding the gateway cannot read is never passed through blind');
  t.is(((await refused.json()) as any).error.code, 'upstream_unreachable');
  // The header's name in any case; two Content-Encoding lines are one stacked encoding (gzip twice): decoding only
  // the first would hand the caller gzip bytes the masker never saw into.
  f.fake.handler = (_req, res) => {
    const body = gzipSync(Buffer.from(JSON.stringify({ leaked: f.keys.openai })));
    res.writeHead(200, { 'Content-Encoding': 'gzip', 'content-length': String(body.length) });
    res.end(body);
  };
  const named = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } });
  t.deepEqual(await named.json(), { leaked: '*'.repeat(f.keys.openai.length) }, 'Content-Encoding in mixed case is read');
  f.fake.handler = (_req, res) => {
    const body = gzipSync(gzipSync(Buffer.from(JSON.stringify({ leaked: f.keys.openai }))));
    res.writeHead(200, { 'Content-Encoding': ['gzip', 'gzip'], 'content-length': String(body.length) });
    res.end(body);
  };
  const stacked = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } });
  t.is(stacked.status, 502, 'two encoding lines are a stack the gateway does not undo: refused');
  t.false((await stacked.text()).includes(f.keys.openai));
});
