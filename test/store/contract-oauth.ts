/**
 * The store contract's upstream OAuth part (contract.ts runs it for every adapter): one connection per
 * (credential, member), put replaces, reads are scoped to the organisation, a refresh's write and the
 * reconnect mark are compare-and-swaps on the ciphertext read, counts by state, deletion by credential or member.
 */
import type { TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import { newId } from '../../src/ids.js';
import type { OAuthConnectionRecord } from '../../src/store/oauth-port.js';
import type { StoreHarness } from './contract.js';

const sealed = () => ({ wrappedDek: randomBytes(40), kekId: 'local:v1', nonce: randomBytes(12), ciphertext: randomBytes(48) });

function connection(orgId: string, credentialId: string, memberId: string, over: Partial<OAuthConnectionRecord> = {}): OAuthConnectionRecord {
  return { orgId, credentialId, memberId, state: 'connected', ...sealed(), connectedBy: 'otk_x', connectedAt: 1_700_000_000_000, updatedAt: 1_700_000_000_000, ...over };
}

export function oauthConnectionContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  test(n('oauth connections: put/get per member, compare-and-swap refresh and reconnect mark, counts, delete'), async (t) => {
    const store = await (await h.backend(t)).open();
    const org = newId('org');
    const cred = newId('cred');
    const mine = connection(org, cred, '');
    await store.putOAuthConnection(mine);
    t.deepEqual(await store.getOAuthConnection(org, cred, ''), mine);
    t.is(await store.getOAuthConnection(newId('org'), cred, ''), undefined, 'another organisation does not see it');
    t.is(await store.getOAuthConnection(org, cred, 'usr_a'), undefined, 'a member has none of their own yet');

    const next = sealed();
    t.false(await store.replaceOAuthTokens(org, cred, '', randomBytes(48), next, 2), 'a stale ciphertext writes nothing');
    t.true(await store.replaceOAuthTokens(org, cred, '', mine.ciphertext, next, 2));
    t.false(await store.replaceOAuthTokens(org, cred, '', mine.ciphertext, sealed(), 3), 'the second writer over the same read loses');
    t.deepEqual((await store.getOAuthConnection(org, cred, ''))!.ciphertext, next.ciphertext);

    t.false(await store.markOAuthReconnect(org, cred, '', mine.ciphertext, 4), 'a refusal of an older refresh token marks nothing');
    t.true(await store.markOAuthReconnect(org, cred, '', next.ciphertext, 4));
    t.is((await store.getOAuthConnection(org, cred, ''))!.state, 'reconnect');
    t.false(await store.replaceOAuthTokens(org, cred, '', next.ciphertext, sealed(), 5), 'no refresh is stored over a reconnect mark');

    await store.putOAuthConnection(connection(org, cred, 'usr_a'));
    await store.putOAuthConnection(connection(org, cred, 'usr_b'));
    t.deepEqual(await store.countOAuthConnections(org, cred), { connected: 2, reconnect: 1 });
    const reconnected = connection(org, cred, '', { connectedAt: 9 });
    await store.putOAuthConnection(reconnected);
    t.deepEqual(await store.getOAuthConnection(org, cred, ''), reconnected, 'a reconnect replaces it');

    t.is(await store.deleteOAuthConnections(org, cred, 'usr_a'), 1);
    t.deepEqual(await store.countOAuthConnections(org, cred), { connected: 2, reconnect: 0 });
    t.is(await store.deleteOAuthConnections(org, cred), 2);
    t.is(await store.getOAuthConnection(org, cred, 'usr_b'), undefined);
  });
}
