import test from 'ava';
import http from 'node:http';
import { proxyFixture } from '../support/proxy-fixture.js';
import { request } from '../support/request.js';
import { sleep } from '../support/wait.js';

/** Reads an SSE response chunk by chunk, resolving each time `predicate` holds for what has arrived. */
function reader(res: http.IncomingMessage) {
  let text = '';
  const waiters: Array<{ predicate: (s: string) => boolean; resolve: () => void }> = [];
  res.setEncoding('utf8');
  res.on('data', (d: string) => {
    text += d;
    for (const w of [...waiters]) if (w.predicate(text)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  });
  const ended = new Promise<void>((resolve, reject) => {
    res.on('end', resolve);
    res.on('error', reject);
    res.on('aborted', () => reject(new Error('aborted')));
  });
  return {
    get text() {
      return text;
    },
    until: (predicate: (s: string) => boolean) => new Promise<void>((resolve) => (predicate(text) ? resolve() : waiters.push({ predicate, resolve }))),
    ended,
  };
}

/** A POST resolving with the live response (not request(), which reads whole: these tests read a stream as it arrives, or cut it). */
function post(url: string, headers: Record<string, string>, body: unknown): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

test('the first SSE event reaches the caller before the upstream sends its last', async (t) => {
  const f = await proxyFixture(t);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let upstreamFinished = false;
  f.fake.handler = async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"n":1}\n\n');
    await gate; // the last event waits until the test has seen the first one
    res.end('data: {"n":2}\n\ndata: [DONE]\n\n');
    upstreamFinished = true;
  };
  const res = await post(f.proxyUrl('v1/chat/completions'), { 'x-proxy-token': f.tokens.openai.token }, { model: 'm', stream: true, messages: [] });
  t.is(res.statusCode, 200);
  t.is(res.headers['content-type'], 'text/event-stream');
  const r = reader(res);
  await r.until((s) => s.includes('{"n":1}'));
  t.false(upstreamFinished, 'the first event arrived while the upstream was still open');
  t.false(r.text.includes('{"n":2}'));
  release();
  await r.ended;
  t.is(r.text, 'data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
  t.true(upstreamFinished);
});

test('SSE passes byte for byte for each provider shape, events spaced in time', async (t) => {
  const f = await proxyFixture(t);
  const cases = [
    { token: f.tokens.openai.token, path: 'v1/chat/completions', body: { model: 'gpt-x', stream: true, stream_options: { include_usage: true }, messages: [] } },
    { token: f.tokens.anthropic.token, path: 'v1/messages', body: { model: 'claude-x', stream: true, max_tokens: 10, messages: [] } },
    { token: f.tokens.gemini.token, path: 'v1beta/models/gemini-x:streamGenerateContent?alt=sse', body: { contents: [] } },
  ];
  for (const c of cases) {
    // Capture exactly what the upstream wrote.
    const directText = (await request(`${f.fake.url}/${c.path}`, { headers: { 'x-fake-events': '5', 'x-fake-delay-ms': '15' }, body: JSON.stringify(c.body) })).text;
    // Through the gateway the upstream replays those frames one at a time, each only once the caller has received the
    // previous one (and 15 ms later): a gateway that buffered would deliver nothing, and however busy the machine
    // each frame arrives on its own.
    let arrived: () => void = () => undefined;
    f.fake.handler = async (_req, up) => {
      up.writeHead(200, { 'content-type': 'text/event-stream' });
      const frames = directText.split(/(?<=\n\n|\r\n\r\n)/);
      for (const [i, frame] of frames.entries()) {
        const received = new Promise<void>((r) => (arrived = r));
        up.write(frame);
        if (i < frames.length - 1) {
          await received;
          await sleep(15); // paces the fake provider's frames
        }
      }
      up.end();
    };
    const res = await post(f.proxyUrl(c.path), { 'x-proxy-token': c.token }, c.body);
    const arrivals: number[] = [];
    let text = '';
    res.setEncoding('utf8');
    await new Promise<void>((resolve) => {
      res.on('data', (d: string) => {
        arrivals.push(performance.now());
        text += d;
        arrived();
      }).on('end', resolve);
    });
    f.fake.handler = undefined;
    t.is(res.statusCode, 200, c.path);
    t.is(text.replace(/"created":\d+/g, ''), directText.replace(/"created":\d+/g, ''), c.path);
    // Events were delivered as they were produced, not in one buffered piece.
    t.true(arrivals.length >= 4, `${c.path}: ${arrivals.length} chunks`);
    t.true(arrivals.at(-1)! - arrivals[0]! >= 40, `${c.path}: spread over ${arrivals.at(-1)! - arrivals[0]!} ms`);
  }
});

test('a caller that disconnects mid-stream aborts the upstream request', async (t) => {
  const f = await proxyFixture(t);
  const upstreamClosed = new Promise<boolean>((resolve) => {
    f.fake.handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      const timer = setInterval(() => res.write('data: {"tick":true}\n\n'), 20);
      res.once('close', () => {
        clearInterval(timer);
        resolve(!res.writableFinished);
      });
    };
  });
  const res = await post(f.proxyUrl('v1/chat/completions'), { 'x-proxy-token': f.tokens.openai.token }, { model: 'm', stream: true, messages: [] });
  const r = reader(res);
  r.ended.catch(() => {});
  await r.until((s) => s.includes('{"n":1}'));
  res.destroy();
  const aborted = await Promise.race([upstreamClosed, new Promise<string>((resolve) => setTimeout(() => resolve('timeout'), 20_000))]);
  t.is(aborted, true, 'the upstream response was cut short when the caller left');
  // The gateway lives on and serves the next request.
  f.fake.handler = undefined;
  const again = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } });
  t.is(again.status, 200);
  t.is(((await again.json()) as any).object, 'list');
});

test('an upstream reset mid-stream ends the caller stream with an error and the gateway lives', async (t) => {
  const f = await proxyFixture(t);
  const res = await post(f.proxyUrl('v1/chat/completions'), { 'x-proxy-token': f.tokens.openai.token, 'x-fake-reset': '2', 'x-fake-delay-ms': '10' }, { model: 'm', stream: true, messages: [] });
  t.is(res.statusCode, 200);
  const r = reader(res);
  await t.throwsAsync(r.ended);
  const next = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } });
  t.is(next.status, 200);
});
