/**
 * A proxy 401 tells the caller where Keyward looked for the token and what it found there, in the caller's
 * terms (X-Proxy-Token, Authorization: Bearer, x-api-key, the providers' own places), never the value, and carries
 * `WWW-Authenticate: Bearer realm="keyward"` (RFC 6750), which an MCP client reads as "send a bearer token" rather
 * than guessing at an OAuth flow. Unknown, revoked and expired tokens get one answer. The places are the loaded
 * providers' (the registry's list), named once each.
 */
import test from 'ava';
import net from 'node:net';
import { newToken } from '../../src/ids.js';
import { api } from '../support/app.js';
import { proxyFixture } from '../support/proxy-fixture.js';

const QUIET = { KEYWARD_AUTH_FAILURES: '1000000' };
const PLACES = 'X-Proxy-Token, Authorization: Bearer, x-api-key, ';

test('each refusal says where Keyward looked and what it found; WWW-Authenticate: Bearer realm="keyward"; nothing echoed', async (t) => {
  const f = await proxyFixture(t, { env: QUIET });
  const good = f.tokens.openai.token;
  const revoked = f.tokens.anthropic;
  t.is((await api(f.app, 'DELETE', `/v1/tokens/${revoked.id}`, { token: f.org.token })).status, 200);
  const url = f.proxyUrl('v1/models');
  const refuse = async (label: string, headers: Record<string, string>, query = '') => {
    const res = await fetch(url + query, { headers });
    const body = (await res.json()) as { error: { type: string; code: string; message: string } };
    t.is(res.status, 401, label);
    t.like(body.error, { type: 'authentication', code: 'invalid_token' }, label);
    t.is(res.headers.get('www-authenticate'), 'Bearer realm="keyward"', label);
    for (const secret of [good, revoked.token, f.keys.openai, f.org.token]) t.false(body.error.message.includes(secret), `${label}: nothing echoed`);
    return body.error.message;
  };

  const nothing = await refuse('nothing sent', {});
  t.true(nothing.startsWith(`A valid proxy token is required. No proxy token was sent. Keyward looks for a ptok_ token in ${PLACES}`), nothing);
  t.regex(nothing, /x-goog-api-key/, 'a provider\'s own header is listed');
  t.regex(nothing, /\?key=/, 'and its query parameter');
  t.is(nothing.match(/Authorization: Bearer/g)?.length, 1, 'each place once');

  const providerKey = await refuse('a provider key as Bearer', { authorization: `Bearer ${f.keys.openai}` });
  t.true(providerKey.startsWith('A valid proxy token is required. Authorization: Bearer carried a value that is not a ptok_ token (a provider key or an organisation token is never accepted on the proxy). Keyward looks for a ptok_ token in X-Proxy-Token'), providerKey);
  t.regex(await refuse('an org token as x-api-key', { 'x-api-key': f.org.token }), /^A valid proxy token is required\. x-api-key carried a value that is not a ptok_ token/);
  t.regex(await refuse('another scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }), /^A valid proxy token is required\. Authorization carried a value that is not a ptok_ token/);
  t.regex(await refuse('two places, neither a token', { authorization: 'Bearer sk-nope-000000', 'x-api-key': 'sk-nope-000001' }),
    /^A valid proxy token is required\. Authorization: Bearer, x-api-key carried values that are not a ptok_ token/);
  t.regex(await refuse('a key query parameter', {}, '?key=AIza-not-a-token'), /\?key= carried a value that is not a ptok_ token/);
  t.regex(await refuse('an empty X-Proxy-Token', { 'x-proxy-token': '' }), /^A valid proxy token is required\. X-Proxy-Token was empty \(it wins over every other place\)\./);
  t.regex(await refuse('X-Proxy-Token not a token', { 'x-proxy-token': 'sk-nope-000000' }), /^A valid proxy token is required\. X-Proxy-Token carried a value that is not a ptok_ token/);

  // A ptok_ that is not accepted: one answer, whatever the reason, naming where it was found.
  const unknown = await refuse('unknown', { authorization: `Bearer ${newToken('ptok')}` });
  t.is(unknown, 'A valid proxy token is required. The ptok_ token in Authorization: Bearer is not accepted: it is unknown, mistyped, expired or revoked, or its credential was deleted.');
  t.is(await refuse('revoked', { authorization: `Bearer ${revoked.token}` }), unknown);
  // Its last character changed (to B when it was an A: the same token again would be accepted, one run in 62).
  t.is(await refuse('mistyped', { authorization: `Bearer ${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}` }), unknown);
  t.is(await refuse('unknown in X-Proxy-Token', { 'x-proxy-token': newToken('ptok') }), unknown.replace('Authorization: Bearer', 'X-Proxy-Token'));
  t.is(await refuse('unknown in x-api-key', { 'x-api-key': newToken('ptok') }), unknown.replace('Authorization: Bearer', 'x-api-key'));
  t.is(await refuse('unknown as ?key=', {}, `?key=${newToken('ptok')}`), unknown.replace('Authorization: Bearer', '?key='));

  t.regex(await refuse('a doubled query parameter', {}, `?key=${good}&key=${good}`), /^A valid proxy token is required\. The query parameter key was sent more than once/);
  t.is(f.fake.received.length, 0, 'nothing reached the provider');
  t.is((await fetch(url, { headers: { authorization: `Bearer ${good}` } })).status, 200, 'the control');
});

test('a header sent twice is named as such (raw socket: fetch would join the copies)', async (t) => {
  const f = await proxyFixture(t, { env: QUIET });
  const good = f.tokens.openai.token;
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(f.app.port, '127.0.0.1', () => {
      socket.end(`GET /v1/proxy/v1/models HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${good}\r\nX-Proxy-Token: ${good}\r\nConnection: close\r\n\r\n`);
    });
    let text = '';
    socket.on('data', (d) => (text += d));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  t.regex(raw, /^HTTP\/1\.1 401/);
  t.regex(raw, /\r\nwww-authenticate: Bearer realm="keyward"\r\n/i);
  t.regex(raw, /X-Proxy-Token was sent more than once: send one proxy token, once\./);
  t.false(raw.includes(good));
});
