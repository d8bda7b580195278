// A fast fake OpenAI-shaped provider for the benchmark, in its own process.
// Answers any request once its body has arrived:
//   default                 a fixed chat.completion JSON (content-length)
//   x-bench-sse: N:MS       N chat.completion.chunk SSE events, MS ms apart
//                           (the first right away), then `data: [DONE]`.
// Every response carries x-bench-bytes (the body's length) so a client can
// check that a stream arrived whole through any proxy.
// Usage: node bench/lib/fake-upstream.mjs  (PORT, default 0; prints "ready <port>")
import http from 'node:http';

const created = 1700000000;
const JSON_BODY = Buffer.from(JSON.stringify({
  id: 'chatcmpl-bench', object: 'chat.completion', created, model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake provider! This is a short answer.' }, finish_reason: 'stop', logprobs: null }],
  usage: { prompt_tokens: 11, completion_tokens: 12, total_tokens: 23 },
}));
const JSON_HEADERS = { 'content-type': 'application/json', 'content-length': String(JSON_BODY.length), 'x-request-id': 'upstream-bench', 'x-bench-bytes': String(JSON_BODY.length) };

const chunk = (delta, finish, extra = {}) => `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }], ...extra })}\n\n`;
// A word that names no token count (most events don't; one that did would make Keyward's usage reader parse every event).
const EVENT = Buffer.from(chunk({ content: ' hello' }, null));
const LAST = Buffer.from(chunk({}, 'stop', { usage: { prompt_tokens: 11, completion_tokens: 200, total_tokens: 211 } }) + 'data: [DONE]\n\n');

function sse(res, events, delay) {
  const total = (events - 1) * EVENT.length + LAST.length;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-request-id': 'upstream-bench', 'x-bench-bytes': String(total) });
  let sent = 0;
  const next = () => {
    if (res.destroyed) return;
    sent++;
    if (sent >= events) {
      res.end(LAST);
      return;
    }
    res.write(EVENT);
    if (delay > 0) setTimeout(next, delay);
    else setImmediate(next);
  };
  next();
}

const server = http.createServer((req, res) => {
  req.on('end', () => {
    const spec = req.headers['x-bench-sse'];
    if (typeof spec === 'string') {
      const [n, ms] = spec.split(':').map(Number);
      sse(res, Math.max(1, n || 1), ms || 0);
    } else {
      res.writeHead(200, JSON_HEADERS);
      res.end(JSON_BODY);
    }
  });
  req.resume();
});
server.keepAliveTimeout = 120_000;
server.headersTimeout = 125_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', 4096, () => {
  process.stdout.write(`ready ${server.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
