// The floor for any proxy written on Node: keep-alive agent, the caller's
// x-proxy-token swapped for the key, bytes piped both ways. Nothing else.
// Usage: PORT=… UPSTREAM=127.0.0.1:9000 BENCH_KEY=sk-… node bench/lib/bare-proxy.mjs
import http from 'node:http';

const [host, port] = process.env.UPSTREAM.split(':');
const key = `Bearer ${process.env.BENCH_KEY}`;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1024, maxFreeSockets: 256 });

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: key };
  delete headers['x-proxy-token'];
  const up = http.request({ host, port, method: req.method, path: req.url.slice(9), headers, agent }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  up.on('error', () => res.destroy());
  res.on('close', () => res.writableFinished || up.destroy());
  req.pipe(up);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
