/**
 * Bedrock under attack: an upstream that echoes every secret it knows (the AWS
 * secret key, the session token, the Bedrock API key) has each masked in headers,
 * JSON and the binary event stream; none of them, nor the ptok, reaches a log line,
 * an error or the store files. The caller's own Bearer / SigV4 never reaches
 * upstream. The HTTP/2 side is bounded (header list size, concurrent streams), and
 * a connection that never sends its first bytes is closed; HTTP/1.1 behaves as
 * before next to it.
 */
import test from 'ava';
import http2 from 'node:http2';
import net from 'node:net';
import { assertNoLeaks } from '../adversarial/_harness.js';
import { request } from '../support/request.js';
import { API_KEY, bedrockGateway, bedrockToken, SECRET_ACCESS_KEY, SESSION_TOKEN, type BedrockAuth } from '../support/cloud/bedrock-setup.js';
import { quiet } from '../support/wait.js';

const BODY = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hello' }] }] });
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1%3A0';

for (const kind of ['session', 'api_key'] as BedrockAuth[]) {
  test(`an echoing upstream (${kind}): every stored secret masked in headers, JSON and event-stream frames; none in logs or the store`, async (t) => {
    const s = await bedrockGateway(t);
    const tok = await bedrockToken(s, kind);
    s.fake.echo = true;
    const secrets = kind === 'api_key' ? [API_KEY] : [SECRET_ACCESS_KEY, SESSION_TOKEN];
    const seen: string[] = [];
    for (const op of ['converse', 'converse-stream', 'invoke', 'invoke-with-response-stream']) {
      const r = await request(`${s.app.url}/v1/proxy/model/${MODEL}/${op}`, { headers: { authorization: `Bearer ${tok.token}` }, body: BODY });
      t.is(r.status, 200, `${op}: ${r.text.slice(0, 200)}`);
      const whole = JSON.stringify(r.rawHeaders) + r.text;
      seen.push(whole);
      t.true(whole.includes('*'.repeat(secrets[0]!.length)), `${op}: the echo is there, masked`);
    }
    // A refused request's error names no secret either.
    s.fake.apiKeys.clear();
    s.fake.keys.clear();
    const refused = await request(`${s.app.url}/v1/proxy/model/${MODEL}/converse`, { headers: { authorization: `Bearer ${tok.token}` }, body: BODY });
    t.is(refused.status, 403);
    seen.push(JSON.stringify(refused.rawHeaders) + refused.text);
    await quiet(s.app); // the refusal's log line is written when it closes
    assertNoLeaks(t, { canaries: secrets, tokens: [tok.token] }, { logs: s.app.logText(), dataDir: s.app.dataDir, extra: seen });
  });
}

test('the caller\'s own credential never reaches upstream, whichever carrier held the ptok; a SigV4 header without a ptok is 401', async (t) => {
  const s = await bedrockGateway(t);
  const tok = await bedrockToken(s, 'keys');
  const sig = `AWS4-HMAC-SHA256 Credential=${tok.token}/20261123/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=${'b'.repeat(64)}`;
  const r = await request(`${s.app.url}/v1/proxy/model/${MODEL}/converse`, { headers: { authorization: sig, 'x-amz-security-token': 'caller-token-XYZ', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' }, body: BODY });
  t.is(r.status, 200, r.text);
  const got = s.fake.received.at(-1)!;
  t.false(JSON.stringify(got.headers).includes('b'.repeat(64)), 'the caller\'s signature is discarded');
  t.false(JSON.stringify(got.headers).includes('caller-token-XYZ'));
  t.not(got.headers['x-amz-content-sha256'], 'UNSIGNED-PAYLOAD');
  const before = s.fake.received.length;
  for (const authorization of [
    `AWS4-HMAC-SHA256 Credential=AKIAREALKEY000000000/20261123/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=${'c'.repeat(64)}`,
    `AWS4-HMAC-SHA256 Credential=${tok.token}x/20261123/us-east-1/bedrock/aws4_request`,
    `AWS4-HMAC-SHA256 Credential=${tok.token.slice(0, -1)}/20261123/us-east-1/bedrock/aws4_request`,
    `Basic ${tok.token}`,
  ]) {
    const refused = await request(`${s.app.url}/v1/proxy/model/${MODEL}/converse`, { headers: { authorization }, body: BODY });
    t.is(refused.status, 401, authorization.slice(0, 60));
  }
  t.is(s.fake.received.length, before, 'nothing forwarded');
});

test('HTTP/2 is bounded: an oversized header list is not served, every session advertises at most 100 streams, a silent connection is closed; HTTP/1.1 still answers', async (t) => {
  const s = await bedrockGateway(t);
  const tok = await bedrockToken(s, 'api_key');
  const session = http2.connect(s.app.url);
  session.on('error', () => {});
  t.teardown(() => session.destroy());
  const overSession = (headers: http2.OutgoingHttpHeaders, body = BODY) => new Promise<{ status: number | string; text: string }>((resolve) => {
    const req = session.request({ ':method': 'POST', 'content-type': 'application/json', ...headers });
    let text = '';
    let status: number | string = 0;
    req.on('response', (h) => (status = h[':status'] ?? 0));
    req.on('data', (c) => (text += c));
    req.on('end', () => resolve({ status, text }));
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ status: e.code ?? 'error', text }));
    req.end(body);
  });
  const ok = await overSession({ ':path': `/v1/proxy/model/${MODEL}/converse`, authorization: `Bearer ${tok.token}` });
  t.is(ok.status, 200, ok.text);
  t.false(Object.keys(s.fake.received.at(-1)!.headers).some((h) => h.startsWith(':')), 'no pseudo-header upstream');

  // Refusals over HTTP/2 are the contract's JSON, including those that would close an HTTP/1.1 connection.
  const refused = await overSession({ ':path': `/v1/proxy/model/${MODEL}/converse`, authorization: 'Bearer ptok_not_a_token' }, 'x'.repeat(100 * 1024));
  t.is(refused.status, 401, refused.text);
  t.is(JSON.parse(refused.text).error.code, 'invalid_token');
  const big = await overSession({ ':path': `/v1/proxy/model/${MODEL}/converse`, authorization: `Bearer ${tok.token}`, 'x-big': 'a'.repeat(40 * 1024) });
  t.not(big.status, 200, 'a header list over 32 KiB is not served');

  // Many sessions at once: each is told the limit (streams beyond it are refused by the peer's own nghttp2).
  const flood = await Promise.all(Array.from({ length: 150 }, () => new Promise<string>((resolve) => {
    const c = http2.connect(s.app.url);
    c.on('error', () => resolve('session error'));
    c.on('remoteSettings', (settings) => {
      resolve(String(settings.maxConcurrentStreams));
      c.destroy();
    });
  })));
  t.true(flood.every((v) => v === '100'), 'every session advertises at most 100 concurrent streams');

  // A connection that sends nothing is closed after the header timeout.
  const silent = net.connect(s.app.port, '127.0.0.1');
  const closedIn = await new Promise<number>((resolve) => {
    const started = Date.now();
    silent.on('close', () => resolve(Date.now() - started));
    silent.on('error', () => {});
    setTimeout(() => resolve(-1), 5 * s.app.config.headersTimeoutMs + 5000);
  });
  t.true(closedIn >= 0, 'the silent connection was closed');

  const h1 = await request(`${s.app.url}/v1/proxy/model/${MODEL}/converse`, { headers: { authorization: `Bearer ${tok.token}` }, body: BODY });
  t.is(h1.status, 200);
});
