/**
 * The authorization server's clean-up on the injected timers (no wall-clock wait): a minute after start, a code
 * never redeemed whose minute has passed is deleted (redeeming it is then "not valid", not "expired") while an
 * active grant stays usable; an hour's run thirty days on deletes the grant that ended and the registered clients
 * unused for thirty days that no grant names, and keeps a client a person was asked about that day.
 */
import test from 'ava';
import { ManualClock } from '../support/clocks.js';
import { authorizedTokens, authorizeOverHttp, authorizeQuery, pkce, registerClient, startMcpAuth, tokenRequest } from './fixture.js';

const DAY_MS = 86_400_000;
const REDIRECT = 'http://127.0.0.1:47123/callback';

test('ended grants and unused registered clients are deleted by the hourly clean-up; live ones are kept', async (t) => {
  const wall = new ManualClock(Date.now());
  const timers = new ManualClock();
  const f = await startMcpAuth(t, {}, { clock: wall, timers });
  const sweeps = () => f.app.logs.filter((l) => typeof l.message === 'string' && l.message.startsWith('MCP authorization clean-up')).map((l) => ({ grants: l.grants, clients: l.clients }));

  const active = await authorizedTokens(f, ['get_issue']);
  const unredeemedClient = await registerClient(f, REDIRECT);
  const { verifier, challenge } = pkce();
  const consented = await authorizeOverHttp(f, { clientId: unredeemedClient, redirectUri: REDIRECT, challenge, resource: f.resource }, f.org.token);
  const code = new URL(consented.location!).searchParams.get('code')!;
  const neverUsed = await registerClient(f, REDIRECT);

  // The first run, a minute on: the code's minute is over.
  wall.advance(61_000);
  await timers.tick(60_000);
  t.deepEqual(sweeps(), [{ grants: 1, clients: 0 }]);
  const late = await tokenRequest(f, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: unredeemedClient, resource: f.resource });
  t.like(late, { status: 400, body: { error: 'invalid_grant', error_description: 'The authorization code is not valid.' } }, 'deleted, not merely expired');
  const refreshed = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: active.refresh, client_id: active.clientId });
  t.is(refreshed.status, 200, 'the active grant is untouched');

  // Thirty days on (KEYWARD_MAX_TTL): the active grant has ended. Today a person is asked about a new client.
  wall.advance(30 * DAY_MS);
  const today = await registerClient(f, REDIRECT);
  t.is((await authorizeOverHttp(f, { clientId: today, redirectUri: REDIRECT, challenge: pkce().challenge, resource: f.resource }, f.org.token, null)).status, 303);
  await timers.tick(3_600_000);
  // The ended grant and the denied one (ended at once); the three clients unused for thirty days.
  t.deepEqual(sweeps().at(-1), { grants: 2, clients: 3 });
  for (const gone of [active.clientId, unredeemedClient, neverUsed]) {
    const page = await fetch(`${f.issuer}/v1/oauth/authorize?${authorizeQuery({ clientId: gone, redirectUri: REDIRECT, challenge, resource: f.resource })}`);
    t.is(page.status, 400);
    t.regex(await page.text(), /No client is registered with this/);
  }
  const kept = await fetch(`${f.issuer}/v1/oauth/authorize?${authorizeQuery({ clientId: today, redirectUri: REDIRECT, challenge, resource: f.resource })}`);
  t.is(kept.status, 200, 'the client asked about today is kept');
  await kept.text();
  const after = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token as string, client_id: active.clientId });
  t.is(after.status, 400);
});
