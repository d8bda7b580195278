/**
 * Vertex, adversarially: the caller's own credentials (Bearer, x-goog-api-key, ?key=,
 * ?access_token=) never reach upstream; an upstream echoing the service account's private key
 * or the minted access token gets them masked, in headers and in a stream; a refused grant is
 * a 502 that names nothing; neither the key nor a minted token is in a log line or the store.
 */
import test from 'ava';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { api } from '../support/app.js';
import { newServiceAccount } from '../support/cloud/google-auth.js';
import { LOCATION, PROJECT, vertexFixture, type VertexFixture } from '../support/cloud/google-fixture.js';

const GEMINI_BODY = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });

/** Every byte under the data folder (SQLite database, WAL, anything else), as latin1 text. */
function storeText(f: VertexFixture): string {
  const walk = (dir: string): string[] => readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
  return walk(f.app.dataDir).map((p) => readFileSync(p).toString('latin1')).join('\n');
}

/** A line of the key's base64 body: what any copy of the key would contain. */
const keyLine = (pem: string): string => pem.split('\n')[3]!;

test('the caller\'s own credentials never reach Vertex, in any place the SDKs put them', async (t) => {
  const f = await vertexFixture(t);
  const url = `${f.proxyUrl(f.geminiPath('generateContent'))}?key=${f.tokens.sa.token}&access_token=caller-oauth-token-123&alt=json`;
  const r = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${f.tokens.sa.token}`, 'x-goog-api-key': f.tokens.sa.token, 'content-type': 'application/json' },
    body: GEMINI_BODY,
  });
  t.is(r.status, 200);
  const sent = f.vertex.received[0]!;
  t.regex(String(sent.headers.authorization), /^Bearer ya29\.sa-/);
  t.is(sent.headers['x-goog-api-key'], undefined);
  t.is(sent.url.split('?')[1], 'alt=json');
  t.false(JSON.stringify(sent).includes(f.tokens.sa.token));
  t.false(JSON.stringify(sent).includes('caller-oauth-token-123'));
});

test('an upstream echoing the private key or the minted token gets them masked, in headers, JSON and a stream', async (t) => {
  const f = await vertexFixture(t);
  const first = await fetch(f.proxyUrl(f.geminiPath('generateContent')), { method: 'POST', headers: { authorization: `Bearer ${f.tokens.sa.token}` }, body: GEMINI_BODY });
  t.is(first.status, 200);
  const minted = String(f.vertex.received[0]!.headers.authorization).slice('Bearer '.length);
  const escapedKey = JSON.stringify(f.sa.privateKey).slice(1, -1);
  f.vertex.echo = [minted, f.sa.privateKey, escapedKey];
  const claude = `v1/projects/${PROJECT}/locations/${LOCATION}/publishers/anthropic/models/claude-sonnet-4@20250514`;
  for (const p of [f.geminiPath('generateContent'), `${f.geminiPath('streamGenerateContent')}?alt=sse`, `${claude}:streamRawPredict`, `${claude}:rawPredict`]) {
    const r = await fetch(f.proxyUrl(p), { method: 'POST', headers: { authorization: `Bearer ${f.tokens.sa.token}` }, body: '{"stream":true}' });
    t.is(r.status, 200, p);
    const echoHeader = r.headers.get('x-echo') ?? '';
    const text = await r.text();
    for (const leaked of [minted, keyLine(f.sa.privateKey), escapedKey.slice(40, 120)]) {
      t.false(text.includes(leaked), `${p}: body`);
      t.false(echoHeader.includes(leaked), `${p}: header`);
    }
    t.true(echoHeader.includes('*'.repeat(minted.length)), `${p}: the header's token became stars`);
    t.true(text.includes('*'.repeat(20)), `${p}: the body's echo became stars`);
  }
  const logs = f.app.logText();
  const store = storeText(f);
  for (const secret of [minted, keyLine(f.sa.privateKey), f.sa.privateKeyId]) {
    t.false(logs.includes(secret), 'not in a log line');
    t.false(store.includes(secret), 'not in the store');
  }
});

test('a rejected or revoked key is 502 upstream_auth_failed with Google\'s words, never the key; not logged with the key; the next request tries again', async (t) => {
  const f = await vertexFixture(t);
  // A key the token endpoint does not know: its assertion is refused (400 invalid_grant).
  const stranger = newServiceAccount(PROJECT);
  const made = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body: { provider: 'vertex', project: PROJECT, location: LOCATION, service_account: stranger.json } });
  t.is(made.status, 201);
  t.false(made.text.includes(keyLine(stranger.privateKey)));
  const tok = await api(f.app, 'POST', '/v1/tokens', { token: f.org.token, body: { credential_id: made.body.id, ttl: '15m' } });
  for (let i = 0; i < 2; i++) {
    const r = await fetch(f.proxyUrl(f.geminiPath('generateContent')), { method: 'POST', headers: { authorization: `Bearer ${tok.body.token}` }, body: GEMINI_BODY });
    t.is(r.status, 502);
    const text = await r.text();
    const error = JSON.parse(text).error;
    t.is(error.code, 'upstream_auth_failed', 'the refused key is the caller\'s to fix, not an unreachable provider');
    t.is(error.type, 'upstream');
    t.regex(error.message, /^the Google token endpoint refused the grant: HTTP 400 invalid_grant: unknown kid$/, 'Google\'s own words');
    t.false(text.includes(keyLine(stranger.privateKey)));
  }
  t.is(f.google.refusals.length, 2, 'each request after a failure tries again');
  t.is(f.vertex.received.length, 0, 'nothing was forwarded');
  const logs = f.app.logText();
  t.true(logs.includes('refused the grant'), 'the failure is logged');
  t.false(logs.includes(keyLine(stranger.privateKey)));
  t.false(storeText(f).includes(keyLine(stranger.privateKey)), 'the key is sealed in the store');
});

test('an access token too short-lived to send is 502 upstream_auth_failed saying so (not "could not be reached"); logged once; nothing forwarded', async (t) => {
  const f = await vertexFixture(t);
  f.google.expiresIn = 90; // the send margin is a minute: a token must live past two
  for (let i = 0; i < 2; i++) {
    const r = await fetch(f.proxyUrl(f.geminiPath('generateContent')), { method: 'POST', headers: { authorization: `Bearer ${f.tokens.sa.token}` }, body: GEMINI_BODY });
    t.is(r.status, 502);
    const error = (await r.json() as { error: { code: string; type: string; message: string } }).error;
    t.is(error.code, 'upstream_auth_failed');
    t.is(error.type, 'upstream');
    t.is(error.message, 'A Google access token was minted with 90 s to live, too short to send (more than 120 s is needed): the minted token is unusable. '
      + 'Check the lifetime the credential\'s identity grants its tokens.');
  }
  t.is(f.vertex.received.length, 0, 'nothing was forwarded');
  t.is(f.google.mints, 2, 'each request after a failure tries again');
  const logs = f.app.logText();
  t.is(logs.split('\n').filter((l) => l.includes('too short to send')).length, 2, 'logged once per mint');
  // Long enough again: served.
  f.google.expiresIn = 3599;
  t.is((await fetch(f.proxyUrl(f.geminiPath('generateContent')), { method: 'POST', headers: { authorization: `Bearer ${f.tokens.sa.token}` }, body: GEMINI_BODY })).status, 200);
});
