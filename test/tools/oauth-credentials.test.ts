/**
 * Upstream OAuth credentials against a stand-in SaaS (test/support/saas-oauth.ts) whose MCP server accepts
 * only a current access token: a `kind: oauth` credential is stored (client secret sealed), connected by the
 * authorization code flow with PKCE driven over HTTP as a browser would (the console's callback page is
 * played by the test), used through the proxy, refreshed before expiry on the injected clock (never sent
 * expired), refreshed once for many concurrent requests, kept working across refresh-token rotation, and
 * answered 502 upstream_auth_failed with state `reconnect` once the SaaS revokes the refresh token; then
 * reconnected. No token, code or secret is in the store file, a log line or any response.
 */
import test, { type ExecutionContext } from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { api, createOrg, mintToken, startApp, type ApiResponse, type Org, type TestApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { launchBrowser, watchedPage } from '../support/browser.js';
import { cleanRun, openPage, signIn } from '../support/console-page.js';
import { startIssuerFront } from '../support/cloud/keyward-oidc.js';
import { startSaas, type Saas } from '../support/saas-oauth.js';
import { eventually, sleep } from '../support/wait.js';
import { startProvider } from '../support/openid-provider.js';
import { sessionCall, signIn as ssoSignIn } from '../support/sign-in.js';
import { oauthSendMargin, refreshPoint, upstreamOAuthSigner } from '../../src/gateway/upstream/signers/upstream-oauth.js';
import { CredentialService } from '../../src/vault/credential-service.js';
import { OAuthConnections } from '../../src/vault/oauth-connections.js';

const CLIENT_ID = 'Iv1.keyward-test-client';
const CLIENT_SECRET = 'saas-client-secret-0123456789abcdef';
const MINUTE = 60_000;

interface Rig {
  app: TestApp;
  saas: Saas;
  clock: ManualClock;
  org: Org;
  front: string;
  /** Every response body the test saw (for the leak check). */
  seen: string[];
}

async function rig(t: ExecutionContext, options: { rotate?: boolean; accessTtlS?: number } = {}): Promise<Rig> {
  const clock = new ManualClock();
  const front = await startIssuerFront(t);
  const saas = await startSaas({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: `${front.url}/console/oauth-callback`, clock, accessTtlS: options.accessTtlS ?? 3600, rotate: options.rotate ?? false });
  t.teardown(() => saas.close());
  const app = await startApp(t, {
    clock,
    env: { KEYWARD_ISSUER_URL: front.url, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1', KEYWARD_UPSTREAM_GITHUB_MCP: saas.url },
  });
  front.point(app.url);
  return { app, saas, clock, org: await createOrg(app, 'oauth-co'), front: front.url, seen: [] };
}

async function call(r: Rig, method: string, p: string, options: Parameters<typeof api>[3] = {}): Promise<ApiResponse> {
  const res = await api(r.app, method, p, { token: r.org.token, ...options });
  r.seen.push(res.text);
  return res;
}

async function createOAuthCredential(r: Rig, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await call(r, 'POST', '/v1/credentials', {
    body: { provider: 'github-mcp', kind: 'oauth', name: 'github (oauth)', authorization_url: `${r.saas.url}/authorize`, token_url: `${r.saas.url}/token`, client_id: CLIENT_ID, client_secret: CLIENT_SECRET, scopes: ['repo', 'read:org'], ...extra },
  });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
  return res.body.id;
}

/** The connect flow as the console and a browser run it: start, the SaaS's consent (a redirect), the callback page's completion. */
async function connect(r: Rig, credentialId: string): Promise<ApiResponse> {
  const start = await call(r, 'POST', `/v1/credentials/${credentialId}/connect`);
  if (start.status !== 200) throw new Error(`connect: ${start.status} ${start.text}`);
  const consent = await fetch(start.body.authorization_url, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location') ?? '');
  return call(r, 'POST', '/v1/oauth/callback', { token: undefined, body: { state: back.searchParams.get('state'), code: back.searchParams.get('code'), binding: start.body.binding } });
}

async function mcp(r: Rig, token: string, method = 'tools/list', params?: unknown): Promise<ApiResponse> {
  const res = await api(r.app, 'POST', '/v1/proxy/mcp/', {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' },
    body: { jsonrpc: '2.0', id: 1, method, ...(params ? { params } : {}) },
  });
  r.seen.push(res.text);
  return res;
}

/** Nothing the SaaS issued, nor the client secret, is in the store's files, the logs or a response. */
function assertNoLeak(t: ExecutionContext, r: Rig): void {
  const secrets = [CLIENT_SECRET, ...r.saas.issued];
  t.true(r.saas.issued.length >= 3, 'the SaaS issued tokens to look for');
  const files = readdirSync(r.app.dataDir).map((f) => readFileSync(path.join(r.app.dataDir, f)).toString('latin1'));
  const places = { store: files.join('\n'), logs: r.app.logText(), responses: r.seen.join('\n') };
  for (const [where, text] of Object.entries(places)) {
    const found = secrets.filter((s) => text.includes(s));
    t.deepEqual(found.map((s) => s.slice(0, 12)), [], `no token, code or secret in the ${where}`);
  }
}

test('an OAuth credential: stored, connected with PKCE, refreshed before expiry on the clock, one refresh for many, a revoked refresh token → 502 and reconnect', async (t) => {
  const r = await rig(t);
  const id = await createOAuthCredential(r);
  const view = (await call(r, 'GET', `/v1/credentials/${id}`)).body;
  t.like(view, { kind: 'oauth', client_id: CLIENT_ID, scopes: ['repo', 'read:org'], per_member: false, connection: { state: 'not_connected' } });
  t.false('client_secret' in view);
  const ptok = await mintToken(r.app, r.org, id, '24h');

  // Before it is connected: a clear 502, nothing sent.
  const early = await mcp(r, ptok.token);
  t.is(early.status, 502);
  t.is(early.body.error.code, 'upstream_auth_failed');
  t.regex(early.body.error.message, /not connected/);
  t.is(r.saas.counts.mcpAccepted + r.saas.counts.mcpRefused, 0);

  // The flow: the authorization URL carries PKCE S256, the scopes and Keyward's callback page.
  const start = await call(r, 'POST', `/v1/credentials/${id}/connect`);
  const authorize = new URL(start.body.authorization_url);
  t.is(start.body.redirect_uri, `${r.front}/console/oauth-callback`);
  t.like(Object.fromEntries(authorize.searchParams), { client_id: CLIENT_ID, code_challenge_method: 'S256', response_type: 'code', scope: 'repo read:org', redirect_uri: start.body.redirect_uri });
  const consent = await fetch(authorize, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location')!);
  const completion = { state: back.searchParams.get('state'), code: back.searchParams.get('code') };
  // Carried to another browser (without this one's binding): refused, and the code is not spent.
  const elsewhere = await call(r, 'POST', '/v1/oauth/callback', { token: undefined, body: { ...completion, binding: 'someone-elses-binding' } });
  t.is(elsewhere.status, 400);
  t.is(elsewhere.body.error.param, 'binding');
  const done = await call(r, 'POST', '/v1/oauth/callback', { token: undefined, body: { ...completion, binding: start.body.binding } });
  t.is(done.status, 200, done.text);
  t.is(done.body.connection.state, 'connected');
  t.is(r.saas.counts.codes, 1);
  // A replayed completion: the SaaS refuses the spent code.
  const replay = await call(r, 'POST', '/v1/oauth/callback', { token: undefined, body: { ...completion, binding: start.body.binding } });
  t.is(replay.status, 502);
  t.is(replay.body.error.code, 'upstream_auth_failed');

  // In use: the access token from the connect, no refresh yet.
  const listed = await mcp(r, ptok.token);
  t.is(listed.status, 200, listed.text);
  t.deepEqual(listed.body.result.tools.map((x: { name: string }) => x.name), ['whoami', 'echo_token']);
  t.is(r.saas.counts.refreshes, 0);
  // An upstream that echoes the access token: masked on the way back.
  const echoed = await mcp(r, ptok.token, 'tools/call', { name: 'echo_token', arguments: {} });
  t.is(echoed.status, 200);
  t.false(echoed.text.includes(r.saas.presented.at(-1)!), 'the echoed access token is masked');

  // One hour tokens: nothing is refreshed before 55 minutes…
  r.clock.advance(54 * MINUTE);
  t.is((await mcp(r, ptok.token)).status, 200);
  t.is(r.saas.counts.refreshes, 0);
  // …then the current token still serves while one refresh runs in the background.
  r.clock.advance(2 * MINUTE);
  const first = r.saas.presented.length;
  t.is((await mcp(r, ptok.token)).status, 200);
  await eventually(() => r.saas.counts.refreshes === 1, 'the background refresh');
  t.is((await mcp(r, ptok.token)).status, 200);
  t.not(r.saas.presented.at(-1), r.saas.presented[first], 'the refreshed token is sent');
  t.is(r.saas.counts.mcpRefused, 0, 'never an expired token');

  // Past expiry of everything held: many requests at once share one refresh.
  r.clock.advance(2 * 60 * MINUTE);
  r.saas.hold();
  const many = Array.from({ length: 12 }, () => mcp(r, ptok.token));
  await eventually(() => r.saas.counts.refreshes === 2, 'one refresh asked');
  r.saas.release();
  const answers = await Promise.all(many);
  t.deepEqual(answers.map((a) => a.status), Array(12).fill(200));
  t.is(r.saas.counts.refreshes, 2, 'twelve requests, one refresh');
  t.is(r.saas.counts.mcpRefused, 0);

  // The user revokes the app at the SaaS: the next refresh is refused → 502 saying to reconnect, and the state says so.
  r.saas.revokeRefreshTokens();
  r.clock.advance(2 * 60 * MINUTE);
  const refused = await mcp(r, ptok.token);
  t.is(refused.status, 502);
  t.is(refused.body.error.code, 'upstream_auth_failed');
  t.regex(refused.body.error.message, /must be reconnected/);
  t.is((await call(r, 'GET', `/v1/credentials/${id}`)).body.connection.state, 'reconnect');
  const listedAll = (await call(r, 'GET', '/v1/credentials')).body.data.find((c: { id: string }) => c.id === id);
  t.is(listedAll.connection.state, 'reconnect');
  // The SaaS is not asked again while the connection waits for a person.
  const refreshesBefore = r.saas.counts.refreshes;
  t.is((await mcp(r, ptok.token)).status, 502);
  t.is(r.saas.counts.refreshes, refreshesBefore);

  // Reconnected: working again at once.
  const again = await connect(r, id);
  t.is(again.body.connection.state, 'connected');
  t.is((await mcp(r, ptok.token)).status, 200);
  t.is(r.saas.counts.mcpRefused, 0);
  assertNoLeak(t, r);
});

test('refresh-token rotation: each refresh uses the token the last one gave, sealed back in the store', async (t) => {
  const r = await rig(t, { rotate: true, accessTtlS: 600 });
  const id = await createOAuthCredential(r);
  const ptok = await mintToken(r.app, r.org, id, '24h');
  t.is((await connect(r, id)).status, 200);
  for (let i = 1; i <= 3; i++) {
    // Ten-minute tokens: refreshed half-way (5 minutes), never sent in their last minute; here each is past its end.
    r.clock.advance(11 * MINUTE);
    const res = await mcp(r, ptok.token);
    t.is(res.status, 200, res.text);
    t.is(r.saas.counts.refreshes, i);
  }
  t.is(r.saas.counts.refused, 0, 'no retired refresh token was ever presented');
  t.is(r.saas.counts.mcpRefused, 0);
  // A restart reads the rotated refresh token from the store (the in-memory one is gone).
  await r.app.stop();
  const restarted = await startApp(t, { clock: r.clock, dataDir: r.app.dataDir, env: { KEYWARD_ISSUER_URL: r.front, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1', KEYWARD_UPSTREAM_GITHUB_MCP: r.saas.url } });
  r.clock.advance(11 * MINUTE);
  const after = await api(restarted, 'POST', '/v1/proxy/mcp/', { headers: { authorization: `Bearer ${ptok.token}`, accept: 'application/json' }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
  t.is(after.status, 200, after.text);
  t.is(r.saas.counts.refused, 0);
  assertNoLeak(t, { ...r, seen: [...r.seen, after.text] });
  t.false(restarted.logText().includes(r.saas.issued.at(-1)!));
});

test('kind oauth: refused bodies (http endpoint without the loopback switch, a model provider, a bad scope) and a non-OAuth credential cannot connect', async (t) => {
  const r = await rig(t);
  const bad = async (extra: Record<string, unknown>, param: string) => {
    const res = await call(r, 'POST', '/v1/credentials', { body: { provider: 'github-mcp', kind: 'oauth', authorization_url: `${r.saas.url}/authorize`, token_url: `${r.saas.url}/token`, client_id: CLIENT_ID, ...extra } });
    t.is(res.status, 400, res.text);
    t.is(res.body.error.param, param);
  };
  await bad({ token_url: 'http://example.com/token' }, 'token_url');
  await bad({ scopes: ['has space'] }, 'scopes');
  await bad({ kind: 'oauth2' }, 'kind');
  await bad({ api_key: 'ghp_0123456789' }, 'api_key');
  const model = await call(r, 'POST', '/v1/credentials', { body: { provider: 'openai', kind: 'oauth', authorization_url: `${r.saas.url}/authorize`, token_url: `${r.saas.url}/token`, client_id: CLIENT_ID } });
  t.is(model.status, 400);
  const keyed = await call(r, 'POST', '/v1/credentials', { body: { provider: 'github-mcp', api_key: 'ghp_0123456789abcdefghij' } });
  t.is((await call(r, 'POST', `/v1/credentials/${keyed.body.id}/connect`)).status, 400);
  // A forged or expired state never reaches the SaaS.
  const id = await createOAuthCredential(r);
  const start = await call(r, 'POST', `/v1/credentials/${id}/connect`);
  r.clock.advance(11 * MINUTE);
  const late = await call(r, 'POST', '/v1/oauth/callback', { token: undefined, body: { state: new URL(start.body.authorization_url).searchParams.get('state'), code: 'x', binding: start.body.binding } });
  t.is(late.status, 400);
  t.is(late.body.error.param, 'state');
  t.is(r.saas.counts.codes, 0);
});

test('per member: each signed-in member connects their own account; a member\'s personal token acts for that member only', async (t) => {
  const r = await rig(t);
  const provider = await startProvider({ redirectUri: `${r.front}/v1/sso/callback` });
  t.teardown(() => provider.close());
  const sso = await call(r, 'PUT', '/v1/orgs/self/sso', { body: { issuer: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret, allowed_domains: ['acme.test'] } });
  t.is(sso.status, 200, sso.text);
  const id = await createOAuthCredential(r, { per_member: true });
  t.is((await call(r, 'POST', `/v1/credentials/${id}/connect`)).status, 403, 'the org token is no member: nothing to connect');

  // Two people sign in by single sign-on (role `member`: their groups map to nothing).
  const session = async (sub: string) => {
    provider.nextPerson = { sub, email: `${sub}@acme.test`, name: sub, groups: ['engineers'] };
    const signedIn = await ssoSignIn(r.front, r.org.id);
    const me = await sessionCall(signedIn.browser, r.front, 'GET', '/v1/session');
    return { id: me.body.member.id as string, call: (method: string, p: string, body?: unknown) => sessionCall(signedIn.browser, r.front, method, p, { csrf: me.body.csrf, ...(body !== undefined ? { body } : {}) }) };
  };
  const alice = await session('alice');
  const bob = await session('bob');

  // Alice connects her own account: the flow started with her session, completed by the console's callback page.
  const start = await alice.call('POST', `/v1/credentials/${id}/connect`, {});
  t.is(start.status, 200, JSON.stringify(start.body));
  const back = new URL((await fetch(start.body.authorization_url, { redirect: 'manual' })).headers.get('location')!);
  const done = await call(r, 'POST', '/v1/oauth/callback', { token: undefined, body: { state: back.searchParams.get('state'), code: back.searchParams.get('code'), binding: start.body.binding } });
  t.is(done.status, 200, done.text);
  t.like((await call(r, 'GET', `/v1/credentials/${id}`)).body.connection, { members: { connected: 1, reconnect: 0 } });

  // A proxy token bound to no member: refused, nothing sent.
  const unbound = await mcp(r, (await mintToken(r.app, r.org, id, '24h')).token);
  t.is(unbound.status, 502);
  t.regex(unbound.body.error.message, /not bound to a member/);
  // Each member's personal token acts for its member: Alice's reaches the SaaS with her account; Bob has none yet.
  const aliceToken = await alice.call('POST', '/v1/members/self/tokens', { credential_id: id });
  t.is(aliceToken.status, 201, JSON.stringify(aliceToken.body));
  const served = await mcp(r, aliceToken.body.token);
  t.is(served.status, 200, served.text);
  const bobToken = await bob.call('POST', '/v1/members/self/tokens', { credential_id: id });
  const refused = await mcp(r, bobToken.body.token);
  t.is(refused.status, 502);
  t.is(refused.body.error.code, 'upstream_auth_failed');
  t.regex(refused.body.error.message, /not connected|reconnect/i);
  r.seen.push(JSON.stringify(aliceToken.body), JSON.stringify(bobToken.body));
  assertNoLeak(t, r);
});

test('refresh timing: at the later of 5 minutes before expiry or half the life; never sent within a minute or a tenth of the life of expiry', (t) => {
  t.is(oauthSendMargin(60 * MINUTE), MINUTE);
  t.is(oauthSendMargin(5 * MINUTE), 30_000);
  t.is(refreshPoint({ issuedAt: 0, expiresAt: 60 * MINUTE }), 55 * MINUTE);
  t.is(refreshPoint({ issuedAt: 0, expiresAt: 8 * MINUTE }), 4 * MINUTE);
});

test('console: the Connect button runs the flow in Chromium (the SaaS\'s consent, the callback page), the account shows Connected, then Reconnect once the SaaS refuses the refresh token', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const r = await rig(t);
  const id = await createOAuthCredential(r);
  const ptok = await mintToken(r.app, r.org, id, '24h');
  const browser = await launchBrowser(t);
  const w = await watchedPage(browser, r.front, { width: 1280, alsoAllow: [r.saas.url] });
  const { page } = w;
  // Kept in this tab: the page leaves for the SaaS and comes back.
  await signIn(page, r.front, r.org.token, true);
  await openPage(page, 'Credentials');
  const row = page.locator(`tr[data-id="${id}"]`);
  t.is(await row.locator('.connection').getAttribute('data-state'), 'not_connected');
  await row.getByRole('button', { name: /^Connect / }).click();
  await page.locator('p.ok', { hasText: 'Connected github (oauth).' }).waitFor();
  await row.locator('.connection[data-state="connected"]').waitFor();
  t.false(page.url().includes('code='), 'the code left the address bar');
  t.is(r.saas.counts.codes, 1);
  t.is((await mcp(r, ptok.token)).status, 200);

  r.saas.revokeRefreshTokens();
  r.clock.advance(3 * 60 * MINUTE);
  t.is((await mcp(r, ptok.token)).status, 502);
  await page.reload();
  await page.locator(`tr[data-id="${id}"] .connection[data-state="reconnect"]`).waitFor();
  t.is(await page.locator(`tr[data-id="${id}"]`).getByRole('button', { name: /^Reconnect / }).count(), 1);
  await cleanRun(t, w);
});

/** A second instance on the rig's store (same data dir, settings and clock), as a rig of its own. */
async function secondInstance(t: ExecutionContext, r: Rig): Promise<Rig> {
  const other = await startApp(t, {
    clock: r.clock, dataDir: r.app.dataDir,
    env: { KEYWARD_ISSUER_URL: r.front, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1', KEYWARD_UPSTREAM_GITHUB_MCP: r.saas.url },
  });
  return { ...r, app: other };
}

test('a disconnect on one instance reaches the others within the feed: the access token they hold is let go, and their requests get 502 not connected', async (t) => {
  const r = await rig(t);
  const elsewhere = await secondInstance(t, r);
  const id = await createOAuthCredential(r);
  t.is((await connect(r, id)).status, 200);
  const ptok = await mintToken(r.app, r.org, id, '24h');
  t.is((await mcp(elsewhere, ptok.token)).status, 200, 'the other instance holds the access token now');
  t.is((await call(r, 'DELETE', `/v1/credentials/${id}/connection`)).status, 200);
  // The SaaS still accepts that access token (it was never told): only the instance letting go of it refuses.
  await eventually(async () => (await mcp(elsewhere, ptok.token)).status === 502, 'the other instance refuses', 10_000, 50);
  const refused = await mcp(elsewhere, ptok.token);
  t.is(refused.body.error.code, 'upstream_auth_failed');
  t.regex(refused.body.error.message, /not connected/);
  assertNoLeak(t, r);
});

test('two instances due to refresh at once: one claims the refresh in the vault, the other waits for its result; the SaaS sees one use of the refresh token (it rotates: a second use would be refused)', async (t) => {
  const r = await rig(t, { rotate: true });
  const elsewhere = await secondInstance(t, r);
  const id = await createOAuthCredential(r);
  t.is((await connect(r, id)).status, 200);
  const ptok = await mintToken(r.app, r.org, id, '24h');
  t.is((await mcp(r, ptok.token)).status, 200);
  t.is((await mcp(elsewhere, ptok.token)).status, 200);
  // Past the send margin of the 1 h token: neither instance may send it, both must have a new one first.
  r.clock.advance(59.5 * MINUTE);
  r.saas.hold();
  const first = mcp(r, ptok.token);
  await eventually(() => r.saas.counts.refreshes === 1, 'the first instance is refreshing');
  const second = mcp(elsewhere, ptok.token);
  // A span in which the second instance, had it not read the claim and waited, would have reached the SaaS.
  await sleep(300);
  t.is(r.saas.counts.refreshes, 1, 'one refresh in flight');
  r.saas.release();
  t.deepEqual([(await first).status, (await second).status], [200, 200]);
  t.like(r.saas.counts, { refreshes: 1, refused: 0 });
  t.is(r.saas.presented.at(-1), r.saas.presented.at(-2), 'both instances sent the one new access token');
  assertNoLeak(t, r);
});
