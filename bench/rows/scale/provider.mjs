// The scale row's provider, in its own process (forked by ./index.ts): an OpenAI-shaped chat.completion
// reporting 11 input and 5 output tokens, answered once the request's body has arrived. It counts the
// requests it answered; on the message `count` it replies { count }. Sends { port } when listening.
import http from 'node:http';

const body = Buffer.from(JSON.stringify({
  id: 'c', object: 'chat.completion', model: 'pm-1',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 },
}));
let count = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    count++;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (m) => {
  if (m === 'count') process.send({ count });
});
