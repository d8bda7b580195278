/**
 * The store contract's trust-policy part (contract.ts runs it for every adapter): create, get and
 * list per organisation (newest first, paged), delete once, and the two lookups an exchange makes:
 * by id whatever the organisation, and by (issuer, audience) across organisations, oldest first.
 */
import type { TestFn } from 'ava';
import { BAD_CURSOR, type TrustPolicyRecord } from '../../src/store/ports.js';
import { newId } from '../../src/ids.js';
import type { StoreHarness } from './contract.js';

const GITHUB = 'https://token.actions.githubusercontent.com';

function policy(orgId: string, createdAt: number, over: Partial<TrustPolicyRecord> = {}): TrustPolicyRecord {
  return {
    id: newId('tp'), orgId, issuer: GITHUB, audience: 'keyward', subject: 'repo:acme/app:*', claims: { repository: 'acme/app', run_attempt: 1, fork: false },
    credentialId: newId('cred'), ttl: '15m', scopes: { models: ['gpt-4o-mini'], max_requests: 10 }, createdAt, expiresAt: null, ...over,
  };
}

export function trustPolicyContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  test(n('trust policies: create, get, list newest first with starting_after, org scoping, delete once'), async (t) => {
    const store = await (await h.backend(t)).open();
    const orgA = newId('org');
    const orgB = newId('org');
    const base = 1_700_000_000_000;
    const mine = [policy(orgA, base, { expiresAt: base + 3_600_000 }), policy(orgA, base + 1), policy(orgA, base + 2, { claims: {} })];
    for (const p of mine) await store.createTrustPolicy(p);
    const theirs = policy(orgB, base + 1);
    await store.createTrustPolicy(theirs);

    t.deepEqual(await store.getTrustPolicy(orgA, mine[0]!.id), mine[0]);
    t.is(await store.getTrustPolicy(orgB, mine[0]!.id), undefined, 'another organisation does not see it');
    t.is(await store.getTrustPolicy(orgA, newId('tp')), undefined);

    const p1 = await store.listTrustPolicies(orgA, { limit: 2 });
    if (p1 === BAD_CURSOR) return t.fail();
    t.deepEqual(p1.data.map((p) => p.id), [mine[2]!.id, mine[1]!.id]);
    t.true(p1.hasMore);
    const p2 = await store.listTrustPolicies(orgA, { limit: 2, startingAfter: mine[1]!.id });
    if (p2 === BAD_CURSOR) return t.fail();
    t.deepEqual(p2.data, [mine[0]]);
    t.false(p2.hasMore);
    t.is(await store.listTrustPolicies(orgA, { limit: 2, startingAfter: theirs.id }), BAD_CURSOR, 'a foreign cursor');

    t.false(await store.deleteTrustPolicy(orgB, mine[0]!.id), 'another organisation cannot delete it');
    t.true(await store.deleteTrustPolicy(orgA, mine[0]!.id));
    t.false(await store.deleteTrustPolicy(orgA, mine[0]!.id), 'a second delete');
    t.is(await store.getTrustPolicy(orgA, mine[0]!.id), undefined);
    t.is(await store.findTrustPolicy(mine[0]!.id), undefined);
  });

  test(n('trust policies: found by id whatever the organisation, and by issuer and audience across organisations, oldest first'), async (t) => {
    const backend = await h.backend(t);
    const store = await backend.open();
    const other = await backend.open();
    const base = 1_700_000_000_000;
    const orgA = newId('org');
    const orgB = newId('org');
    const later = policy(orgA, base + 50);
    const earlier = policy(orgB, base + 10, { expiresAt: base + 60_000 });
    const sameMs = [policy(orgA, base + 20), policy(orgA, base + 20)];
    const otherAudience = policy(orgA, base, { audience: 'someone-else' });
    const otherIssuer = policy(orgA, base, { issuer: 'https://gitlab.com' });
    for (const p of [later, earlier, sameMs[1]!, sameMs[0]!, otherAudience, otherIssuer]) await store.createTrustPolicy(p);

    t.deepEqual(await other.findTrustPolicy(earlier.id), earlier, 'another instance reads it by id alone');
    t.is(await other.findTrustPolicy(newId('tp')), undefined);
    const found = await other.findTrustPolicies(GITHUB, 'keyward');
    t.deepEqual(found.map((p) => p.id), [earlier.id, sameMs[0]!.id, sameMs[1]!.id, later.id]);
    t.deepEqual(found[0], earlier);
    t.deepEqual(await other.findTrustPolicies(GITHUB, 'nobody'), []);
    t.deepEqual((await other.findTrustPolicies('https://gitlab.com', 'keyward')).map((p) => p.id), [otherIssuer.id]);
  });
}
