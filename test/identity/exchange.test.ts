/**
 * POST /v1/tokens/exchange end to end, against a real local OIDC issuer: a GitHub-Actions-shaped
 * token buys a proxy token that streams a completion; every kind of bad token is one 400
 * `invalid_grant` in RFC 6749's shape, audited `denied` without the JWT; malformed requests are
 * `invalid_request` / `unsupported_grant_type`; policy choice across organisations is safe.
 */
import test from 'ava';
import OpenAI from 'openai';
import { SignJWT, base64url } from 'jose';
import { api, createOrg, createCredential, startApp } from '../support/app.js';
import { WORDS } from '../support/fake-provider.js';
import { GITHUB_SUBJECT, newSigningKey, startIssuer } from '../support/oidc-issuer.js';
import { identitySetup, AUDIENCE, GRANT, JWT_TYPE } from './_setup.js';
import { ManualClock } from '../support/clocks.js';

test('a GitHub Actions token is exchanged for a ptok that streams a completion, scoped and audited with iss and sub', async (t) => {
  const s = await identitySetup(t);
  const policyId = await s.policy({ models: ['gpt-4o-*'], max_requests: 5 });
  const jwt = await s.issuer.sign(s.clock.now());
  const r = await s.exchange(jwt);
  t.is(r.status, 200, r.text);
  t.deepEqual(Object.keys(r.body).sort(), ['access_token', 'expires_in', 'issued_token_type', 'token_type']);
  t.regex(r.body.access_token, /^ptok_[0-9A-Za-z]{38}$/);
  t.is(r.body.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token');
  t.is(r.body.token_type, 'Bearer');
  t.is(r.body.expires_in, 600);
  t.is(r.headers.get('cache-control'), 'no-store');

  const client = new OpenAI({ apiKey: r.body.access_token, baseURL: `${s.f.app.url}/v1/proxy/v1`, maxRetries: 0 });
  const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true }, { headers: { 'x-fake-events': '4' } });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  t.is(text, WORDS.slice(0, 4).join(''));
  t.is(s.f.fake.received.at(-1)!.headers.authorization, `Bearer ${s.f.keys.openai}`);
  // The policy's scopes rode along: another model is refused.
  const refused = await t.throwsAsync(client.chat.completions.create({ model: 'o3', messages: [] }));
  t.is((refused as InstanceType<typeof OpenAI.APIError>).status, 403);

  // The token is an ordinary token of the organisation, with the policy's scopes.
  const audit = await s.audit(s.f.org.id);
  const minted = audit.find((a) => a.action === 'token.exchange');
  t.truthy(minted);
  t.is(minted!.outcome, 'success');
  t.is(minted!.actor, `oidc:${s.issuer.url}#${GITHUB_SUBJECT}`);
  const tok = await api(s.f.app, 'GET', `/v1/tokens/${minted!.target}`, { token: s.f.org.token });
  t.is(tok.status, 200);
  t.deepEqual(tok.body.models, ['gpt-4o-*']);
  t.is(tok.body.max_requests, 5);
  t.is(tok.body.credential_id, s.f.credentials.openai);
  // Never the JWT (nor the ptok after its response) in logs or the audit trail.
  t.false(s.f.app.logText().includes(jwt));
  t.false(s.f.app.logText().includes(r.body.access_token));
  t.false(JSON.stringify(audit).includes(jwt));
  t.truthy(policyId);
});

test('a form-encoded exchange works as RFC 8693 sends it; refusals are RFC 6749\'s shape', async (t) => {
  const s = await identitySetup(t);
  await s.policy();
  const ok = await s.exchange(await s.issuer.sign(s.clock.now()), {}, true);
  t.is(ok.status, 200, ok.text);
  t.regex(ok.body.access_token, /^ptok_/);
  const bad = await s.exchange('not-a-jwt', {}, true);
  t.is(bad.status, 400);
  t.deepEqual(Object.keys(bad.body).sort(), ['error', 'error_description']);
  t.is(bad.body.error, 'invalid_grant');
});

test('every bad token is 400 invalid_grant, audited denied without the JWT', async (t) => {
  const s = await identitySetup(t);
  await s.policy();
  const now = s.clock.now();
  const other = await newSigningKey();
  const stranger = await startIssuer();
  t.teardown(() => stranger.close());
  const unsigned = (claims: Record<string, unknown>) =>
    `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url.encode(JSON.stringify(claims))}.`;
  const base = { iss: s.issuer.url, aud: AUDIENCE, sub: GITHUB_SUBJECT, repository: 'acme/app', iat: Math.floor(now / 1000), exp: Math.floor(now / 1000) + 300 };
  // HS256 "signed" with the issuer's public key material: must never verify.
  const hmac = await new SignJWT(base).setProtectedHeader({ alg: 'HS256', kid: s.issuer.current.kid }).sign(new TextEncoder().encode(String(s.issuer.current.jwk.n)));

  const cases: Array<[string, string, RegExp]> = [
    ['wrong audience', await s.issuer.sign(now, { aud: 'https://someone-else.test' }), /No trust policy matches/],
    ['expired', await s.issuer.sign(now - 3_600_000), /expired/],
    ['signed by another key under the issuer\'s kid', await s.issuer.sign(now, {}, { key: { ...other, kid: s.issuer.current.kid } }), /signature does not verify/],
    ['signed by another key', await s.issuer.sign(now, {}, { key: other }), /not among the issuer's published keys/],
    ['alg none', unsigned(base), /algorithm is not accepted/],
    ['HMAC', hmac, /algorithm is not accepted/],
    ['subject outside the policy', await s.issuer.sign(now, { sub: 'repo:acme/app:ref:refs/heads/feature' }), /No trust policy matches/],
    ['claim that differs', await s.issuer.sign(now, { repository: 'acme/other' }), /No trust policy matches/],
    ['issuer not allowed', await stranger.sign(now), /issuer is not one this gateway trusts/],
    ['not yet valid', await s.issuer.sign(now + 600_000), /not valid yet/],
    ['no exp', await new SignJWT({ ...base, exp: undefined }).setProtectedHeader({ alg: 'RS256', kid: s.issuer.current.kid }).sign(s.issuer.current.privateKey), /`exp`/],
    ['garbage', 'a.b.c', /not a signed JWT/],
  ];
  for (const [what, jwt, why] of cases) {
    const r = await s.exchange(jwt);
    t.is(r.status, 400, what);
    t.is(r.body?.error, 'invalid_grant', `${what}: ${r.text}`);
    t.regex(r.body?.error_description ?? '', why, what);
    t.false(r.text.includes(jwt), what);
  }
  const denied = (await s.audit('')).filter((a) => a.action === 'token.exchange' && a.outcome === 'denied');
  t.is(denied.reduce((n, a) => n + a.count, 0), cases.length, 'each refusal counted');
  const logs = s.f.app.logText();
  const audit = JSON.stringify(await s.audit(''));
  for (const [what, jwt] of cases) {
    t.false(logs.includes(jwt), `${what}: not logged`);
    t.false(audit.includes(jwt), `${what}: not audited`);
  }
});

test('a JWT replayed after its exp (and the 60 s skew) is refused; within the skew it still works', async (t) => {
  const s = await identitySetup(t);
  await s.policy();
  const jwt = await s.issuer.sign(s.clock.now(), {}, { lifetimeS: 120 });
  t.is((await s.exchange(jwt)).status, 200);
  s.clock.advance(150_000); // 30 s past exp: inside the skew
  t.is((await s.exchange(jwt)).status, 200);
  s.clock.advance(31_000); // 61 s past exp
  const replay = await s.exchange(jwt);
  t.is(replay.status, 400);
  t.is(replay.body.error, 'invalid_grant');
  t.regex(replay.body.error_description, /expired/);
});

test('malformed requests: invalid_request or unsupported_grant_type, in RFC 6749\'s shape', async (t) => {
  const s = await identitySetup(t);
  await s.policy();
  const jwt = await s.issuer.sign(s.clock.now());
  const grant = await s.exchange(jwt, { grant_type: 'client_credentials' });
  t.is(grant.status, 400);
  t.is(grant.body.error, 'unsupported_grant_type');
  const type = await s.exchange(jwt, { subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' });
  t.is(type.body.error, 'invalid_request');
  const actor = await s.exchange(jwt, { actor_token: 'x', actor_token_type: 'urn:ietf:params:oauth:token-type:jwt' });
  t.is(actor.body.error, 'invalid_request');
  const requested = await s.exchange(jwt, { requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' });
  t.is(requested.body.error, 'invalid_request');
  const missing = await api(s.f.app, 'POST', '/v1/tokens/exchange', { body: { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange' } });
  t.is(missing.status, 400);
  t.deepEqual(Object.keys(missing.body).sort(), ['error', 'error_description']);
  t.is(missing.body.error, 'invalid_request');
  const twice = await api(s.f.app, 'POST', '/v1/tokens/exchange', {
    rawBody: `grant_type=a&grant_type=b&subject_token=${jwt}&subject_token_type=x`, headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.is(twice.body.error, 'invalid_request');
  const notJson = await api(s.f.app, 'POST', '/v1/tokens/exchange', { rawBody: '{', headers: { 'content-type': 'application/json' } });
  t.is(notJson.status, 400);
  t.is(notJson.body.error, 'invalid_request');
  const badId = await s.exchange(jwt, { policy_id: 'tp_nope' });
  t.is(badId.body.error, 'invalid_request');
  // Unknown fields are ignored (RFC 6749 §3.2), `audience` and `scope` too.
  const extra = await s.exchange(jwt, { audience: 'x', scope: 'y', client_id: 'z' });
  t.is(extra.status, 200, extra.text);
  const big = await s.exchange('x'.repeat(70_000));
  t.is(big.status, 413);
  t.is(big.body.error, 'invalid_request');
});

test('policy choice: the most specific matching policy of one organisation; two organisations matching → name one with policy_id', async (t) => {
  const s = await identitySetup(t);
  // Behaviour changed in round 4: the most specific policy wins (it was the oldest). Made broadest first, so age cannot decide.
  const broad = await s.policy({ subject: 'repo:acme/*', claims: {}, ttl: '5m' });
  await s.policy({ subject: 'repo:acme/app:*', claims: {}, ttl: '6m' });
  await s.policy({ subject: 'repo:acme/app:*', ttl: '8m' }); // the same prefix with a claim pinned
  await s.policy({ ttl: '7m' }); // the exact subject with a claim
  const jwt = await s.issuer.sign(s.clock.now());
  const first = await s.exchange(jwt);
  t.is(first.body.expires_in, 420, 'the exact subject beats every prefix');
  const other = await s.issuer.sign(s.clock.now(), { sub: 'repo:acme/app:ref:refs/heads/dev' });
  t.is((await s.exchange(other)).body.expires_in, 480, 'among prefixes the longest, then the one with more claims');
  const elsewhere = await s.issuer.sign(s.clock.now(), { sub: 'repo:acme/site:ref:refs/heads/main', repository: 'acme/site' });
  t.is((await s.exchange(elsewhere)).body.expires_in, 300, 'only the broad prefix matches');
  const named = await s.exchange(jwt, { policy_id: broad });
  t.is(named.body.expires_in, 300);

  // Another organisation writes a policy that also matches, equally specific or more: no token is minted for
  // either without policy_id (a narrower policy must not capture another organisation's workloads).
  const globex = await createOrg(s.f.app, 'globex');
  const theirCred = await createCredential(s.f.app, globex, 'openai', 'sk-globex-0123456789abcdef');
  const theirs = await s.policy({ credential_id: theirCred, subject: 'repo:acme/*', claims: {}, ttl: '1m' }, globex.token);
  const ambiguous = await s.exchange(elsewhere);
  t.is(ambiguous.status, 400);
  t.is(ambiguous.body.error, 'invalid_grant');
  t.regex(ambiguous.body.error_description, /policy_id/);
  await s.policy({ credential_id: theirCred, subject: 'repo:acme/app:ref:refs/heads/main', claims: { repository: 'acme/app', ref: 'refs/heads/main' }, ttl: '2m' }, globex.token);
  t.is((await s.exchange(jwt)).body.error, 'invalid_grant', 'a narrower policy of another organisation captures nothing');
  const ours = await s.exchange(jwt, { policy_id: broad });
  t.is(ours.status, 200);
  t.is(ours.body.expires_in, 300);
  const theirsOk = await s.exchange(jwt, { policy_id: theirs });
  t.is(theirsOk.body.expires_in, 60);

  // A policy_id the token does not satisfy, or that does not exist: invalid_grant.
  const narrow = await s.policy({ subject: 'repo:acme/app:ref:refs/heads/release' });
  t.is((await s.exchange(jwt, { policy_id: narrow })).body.error, 'invalid_grant');
  t.is((await s.exchange(jwt, { policy_id: 'tp_000000000000000000000000' })).body.error, 'invalid_grant');

  // Deleting the policy: its exchanges stop; a deleted credential: the policy can no longer mint.
  t.is((await api(s.f.app, 'DELETE', `/v1/trust-policies/${broad}`, { token: s.f.org.token })).status, 200);
  t.is((await s.exchange(jwt, { policy_id: broad })).body.error, 'invalid_grant');
  t.is((await api(s.f.app, 'DELETE', `/v1/credentials/${theirCred}`, { token: globex.token })).status, 200);
  const gone = await s.exchange(jwt, { policy_id: theirs });
  t.is(gone.body.error, 'invalid_grant');
});

test('the exchange is rate-limited per client address: 429 temporarily_unavailable with Retry-After', async (t) => {
  // The bucket refills on the injected timers: a slow machine's seconds do not top it up mid-test.
  const s = await identitySetup(t, { KEYWARD_ADMIN_RATE: '12' }, new ManualClock());
  await s.policy();
  const jwt = await s.issuer.sign(s.clock.now());
  for (let i = 0; i < 12; i++) t.is((await s.exchange(jwt)).status, 200);
  const limited = await s.exchange(jwt);
  t.is(limited.status, 429);
  t.is(limited.body.error, 'temporarily_unavailable');
  t.regex(limited.headers.get('retry-after') ?? '', /^[0-9]+$/);
});

test('a policy\'s ttl is capped by KEYWARD_MAX_TTL as it is at exchange time (lowered since the policy was made)', async (t) => {
  const s = await identitySetup(t);
  await s.policy({ ttl: '2h' });
  const jwt = await s.issuer.sign(s.clock.now());
  t.is((await s.exchange(jwt)).body.expires_in, 7200);
  await s.f.app.stop();
  const app = await startApp(t, {
    dataDir: s.f.app.dataDir, clock: s.clock,
    env: { KEYWARD_OIDC_ISSUERS: s.issuer.url, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1', KEYWARD_MAX_TTL: '1h' },
  });
  const r = await api(app, 'POST', '/v1/tokens/exchange', { body: { grant_type: GRANT, subject_token: jwt, subject_token_type: JWT_TYPE } });
  t.is(r.status, 200, r.text);
  t.is(r.body.expires_in, 3600);
});
