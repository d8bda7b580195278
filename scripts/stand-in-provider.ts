/**
 * `npm run stand-in`: a stand-in for OpenAI on 127.0.0.1, so Keyward can be tried with no provider key and
 * no network. Start the gateway with `KEYWARD_UPSTREAM_OPENAI=http://127.0.0.1:9999` and store any key as an
 * OpenAI credential: chat completions come back in OpenAI's shapes (JSON, or SSE when `stream` is true),
 * "Hello from the fake provider!" a word at a time, from the fake provider the test suite uses
 * (test/support/fake-provider.ts; Anthropic's and Gemini's shapes too). Each request is logged with the last
 * four characters of the key it carried, so a reader sees the stored key arrive and never the proxy token.
 *
 * Listens on STAND_IN_PORT (default 9999); stops on Ctrl-C or SIGTERM.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultHandler } from '../test/support/fake-provider.js';

const port = Number(process.env.STAND_IN_PORT ?? 9999);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`stand-in: STAND_IN_PORT must be a port number, not ${process.env.STAND_IN_PORT}\n`);
  process.exit(2);
}

/** The key's last four characters: enough to tell the stored key from a ptok_, never the key itself. */
function keyHint(req: http.IncomingMessage): string {
  const raw = req.headers.authorization ?? req.headers['x-api-key'] ?? req.headers['x-goog-api-key'];
  const key = (Array.isArray(raw) ? raw[0] : raw)?.replace(/^Bearer\s+/i, '');
  return key ? `…${key.slice(-4)}` : 'none';
}

const server = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  try {
    for await (const c of req) chunks.push(c as Buffer);
  } catch {
    return; // the caller went away mid-body
  }
  process.stdout.write(`stand-in: ${req.method} ${req.url} (key ${keyHint(req)})\n`);
  // Six words 80 ms apart, so the streaming shows; a caller's own x-fake-* headers still win.
  req.headers['x-fake-events'] ??= '6';
  req.headers['x-fake-delay-ms'] ??= '80';
  try {
    await defaultHandler(req, res, Buffer.concat(chunks).toString('utf8'));
  } catch {
    res.destroy();
  }
});

server.listen(port, '127.0.0.1', () => {
  const { port: bound } = server.address() as AddressInfo;
  process.stdout.write(`stand-in: an OpenAI stand-in listening on http://127.0.0.1:${bound}\n`);
});
server.on('error', (err) => {
  process.stderr.write(`stand-in: ${err.message}\n`);
  process.exit(1);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
