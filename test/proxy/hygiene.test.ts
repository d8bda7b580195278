import test from 'ava';
import net from 'node:net';
import { proxyFixture } from '../support/proxy-fixture.js';

const CALLER_SECRETS = ['caller-bearer-secret', 'caller-x-api-key', 'caller-goog-key', 'caller-cookie', 'caller-proxy-auth', 'caller-api-key-hdr'];

function credentialHeadersOf(headers: Record<string, unknown>): string[] {
  return ['authorization', 'x-api-key', 'x-goog-api-key', 'api-key', 'proxy-authorization', 'cookie', 'x-proxy-token'].filter((h) => headers[h] !== undefined);
}

test('upstream sees exactly one credential, the stored key, whatever the caller sends', async (t) => {
  const f = await proxyFixture(t);
  const cases = [
    { provider: 'openai' as const, path: 'v1/chat/completions', header: 'authorization', value: (k: string) => `Bearer ${k}` },
    { provider: 'anthropic' as const, path: 'v1/messages', header: 'x-api-key', value: (k: string) => k },
    { provider: 'gemini' as const, path: 'v1beta/models/gemini-x:generateContent', header: 'x-goog-api-key', value: (k: string) => k },
  ];
  for (const c of cases) {
    const res = await fetch(f.proxyUrl(c.path) + '?key=caller-query-key&alt=json', {
      method: 'POST',
      headers: {
        'x-proxy-token': f.tokens[c.provider].token,
        authorization: 'Bearer caller-bearer-secret',
        'x-api-key': 'caller-x-api-key',
        'x-goog-api-key': 'caller-goog-key',
        'api-key': 'caller-api-key-hdr',
        cookie: 'session=caller-cookie',
        'proxy-authorization': 'Basic caller-proxy-auth',
        forwarded: 'for=6.6.6.6',
        'x-forwarded-for': '6.6.6.6',
        'x-forwarded-host': 'evil.test',
        'x-real-ip': '6.6.6.6',
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'tools-2024',
        'openai-beta': 'assistants=v2',
        'x-custom-thing': 'kept',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'm', messages: [] }),
    });
    t.is(res.status, 200, c.provider);
    await res.arrayBuffer();
    const got = f.fake.received.at(-1)!;
    t.deepEqual(credentialHeadersOf(got.headers), [c.header], `${c.provider}: exactly one credential header`);
    t.is(got.headers[c.header], c.value(f.keys[c.provider]));
    const raw = JSON.stringify(got.rawHeaders) + got.url;
    for (const s of [...CALLER_SECRETS, 'caller-query-key', '6.6.6.6', 'evil.test', f.tokens[c.provider].token]) t.false(raw.includes(s), `${c.provider}: ${s} reached upstream`);
    t.is(got.url, `/${c.path}?alt=json`);
    t.is(got.headers['x-custom-thing'], 'kept');
    t.is(got.headers['anthropic-beta'], 'tools-2024');
    t.is(got.headers['openai-beta'], 'assistants=v2');
    t.is(got.headers['accept-encoding'], 'identity');
    t.is(got.headers.host, `127.0.0.1:${f.fake.port}`);
  }
});

test('the token is accepted where each SDK puts a key, and X-Proxy-Token wins', async (t) => {
  const f = await proxyFixture(t);
  const send = (path: string, headers: Record<string, string>) =>
    fetch(f.proxyUrl(path), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"model":"m","messages":[]}' });
  const viaBearer = await send('v1/chat/completions', { authorization: `Bearer ${f.tokens.openai.token}` });
  t.is(viaBearer.status, 200);
  t.is(f.fake.received.at(-1)!.headers.authorization, `Bearer ${f.keys.openai}`);
  const viaXApiKey = await send('v1/messages', { 'x-api-key': f.tokens.anthropic.token });
  t.is(viaXApiKey.status, 200);
  t.is(f.fake.received.at(-1)!.headers['x-api-key'], f.keys.anthropic);
  t.is(f.fake.received.at(-1)!.headers['anthropic-version'], '2023-06-01', 'the provider default header is added');
  const viaGoog = await send('v1beta/models/g:generateContent', { 'x-goog-api-key': f.tokens.gemini.token });
  t.is(viaGoog.status, 200);
  const viaQuery = await send(`v1beta/models/g:generateContent?key=${f.tokens.gemini.token}`, {});
  t.is(viaQuery.status, 200);
  const got = f.fake.received.at(-1)!;
  t.is(got.url, '/v1beta/models/g:generateContent');
  t.is(got.headers['x-goog-api-key'], f.keys.gemini);
  // X-Proxy-Token wins: an invalid one is refused even with a valid token elsewhere.
  const before = f.fake.received.length;
  const wins = await send('v1/chat/completions', { 'x-proxy-token': 'ptok_nonsense', authorization: `Bearer ${f.tokens.openai.token}` });
  t.is(wins.status, 401);
  t.is(f.fake.received.length, before);
  // A token bound to one provider's credential calls that provider only: the anthropic token on an openai path.
  const cross = await send('v1/chat/completions', { 'x-proxy-token': f.tokens.anthropic.token });
  t.is(cross.status, 403);
});

test('headers named in Connection and other hop-by-hop headers never reach upstream', async (t) => {
  const f = await proxyFixture(t);
  const body = '{"model":"m","messages":[]}';
  const request = [
    'POST /v1/proxy/v1/chat/completions HTTP/1.1',
    `Host: 127.0.0.1:${f.app.port}`,
    `X-Proxy-Token: ${f.tokens.openai.token}`,
    'Connection: keep-alive, x-api-key, x-secret-hop',
    'x-api-key: caller-x-api-key',
    'x-secret-hop: hop-value',
    'Keep-Alive: timeout=5',
    'TE: trailers',
    'Upgrade: h2c',
    'Proxy-Connection: keep-alive',
    'Content-Type: application/json',
    `Content-Length: ${body.length}`,
    '',
    body,
  ].join('\r\n');
  const response = await new Promise<string>((resolve, reject) => {
    const s = net.connect(f.app.port, '127.0.0.1', () => s.write(request));
    let data = '';
    s.on('data', (d) => {
      data += d;
      if (data.includes('chat.completion')) s.end();
    });
    s.on('end', () => resolve(data)).on('error', reject);
  });
  t.regex(response, /^HTTP\/1.1 200/);
  const got = f.fake.received.at(-1)!;
  for (const h of ['x-api-key', 'x-secret-hop', 'te', 'upgrade', 'proxy-connection']) t.is(got.headers[h], undefined, h);
  t.false(JSON.stringify(got.rawHeaders).includes('hop-value'));
  t.false(JSON.stringify(got.rawHeaders).includes('caller-x-api-key'));
  t.is(got.headers.authorization, `Bearer ${f.keys.openai}`);
});

test('no token value or key appears in the gateway logs', async (t) => {
  const f = await proxyFixture(t);
  for (const p of ['openai', 'anthropic', 'gemini'] as const) {
    await (await fetch(f.proxyUrl(p === 'openai' ? 'v1/models' : p === 'anthropic' ? 'v1/models' : 'v1beta/models'), { headers: { 'x-proxy-token': f.tokens[p].token } })).arrayBuffer();
  }
  await (await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': 'ptok_wrong' } })).arrayBuffer();
  const logs = f.app.logText();
  for (const secret of [...Object.values(f.keys), ...Object.values(f.tokens).map((x) => x.token), f.org.token]) t.false(logs.includes(secret));
  const lines = f.app.logs.filter((l) => l.message === 'proxy request');
  t.is(lines.length, 4);
  const ok = lines.find((l) => (l.httpRequest as any).status === 200) as any;
  t.is(ok.httpRequest.requestMethod, 'GET');
  t.regex(ok.httpRequest.requestUrl, /^\/v1\/proxy\//);
  t.regex(ok.httpRequest.latency, /^\d+\.\d+s$/);
  t.regex(ok.keyward.request_id, /^req_/);
  t.is(ok.keyward.org, f.org.id);
  t.regex(ok.keyward.token, /^tok_/);
  t.regex(ok.keyward.credential, /^cred_/);
  t.is(ok.severity, 'INFO');
  t.truthy(ok.time);
});
