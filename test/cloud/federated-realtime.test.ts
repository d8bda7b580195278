/**
 * A federated Azure credential on a realtime session (WebSocket): the relay's upstream handshake carries the
 * Entra token Keyward minted with its own identity (Bearer, never an api-key), and the proxy and the relay share
 * one signer, so the token minted for a plain request serves the session without a second grant.
 */
import test from 'ava';
import { federationFixture } from '../support/cloud/federation-fixture.js';
import { startRealtimeFake } from '../support/realtime-fake.js';
import { openClient } from '../support/realtime-fixture.js';

const ENTRA_TOKEN = 'entra-realtime-token-0123456789abcdef';

test('a realtime session on a federated Azure credential: Bearer <Entra token> upstream, one grant for the proxy and the relay', async (t) => {
  const realtime = await startRealtimeFake(ENTRA_TOKEN);
  t.teardown(() => realtime.close());
  const f = await federationFixture(t, { env: { KEYWARD_UPSTREAM_AZURE: realtime.url } });
  f.entra.issue = () => ENTRA_TOKEN;
  const cred = await f.credential(f.orgA, 'azure');
  // A plain request first (this fake answers HTTP with 404): the token it minted is the one the session uses.
  const plain = await fetch(f.proxyUrl('openai/deployments/my-realtime/chat/completions?api-version=2024-10-21'), {
    method: 'POST', headers: { 'api-key': cred.token, 'content-type': 'application/json' }, body: JSON.stringify({ messages: [] }),
  });
  t.is(plain.status, 404);
  t.is(f.entra.calls, 1);
  const client = await openClient(`${f.app.url.replace(/^http/, 'ws')}/v1/proxy/openai/realtime?api-version=2025-04-01-preview&deployment=my-realtime`, { 'api-key': cred.token });
  await client.waitFor((m) => m.type === 'session.created');
  client.send({ type: 'response.create' });
  await client.waitFor((m) => m.type === 'response.done');
  client.ws.close();
  const hs = realtime.handshakes[0]!;
  t.is(hs.headers.authorization, `Bearer ${ENTRA_TOKEN}`);
  t.is(hs.headers['api-key'], undefined);
  t.false(JSON.stringify(hs).includes('ptok_'));
  t.is(f.entra.calls, 1);
  const second = await openClient(`${f.app.url.replace(/^http/, 'ws')}/v1/proxy/openai/realtime?api-version=2025-04-01-preview&deployment=my-realtime`, { 'api-key': cred.token });
  await second.waitFor((m) => m.type === 'session.created');
  second.ws.close();
  t.is(f.entra.calls, 1, 'the cached token serves the next session');
});
