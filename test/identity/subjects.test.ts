/**
 * Trust-policy subjects (src/identity/subjects.ts): which prefixes fix the owner for each issuer, the
 * order of specificity, and a seeded property test that tries to write a prefix reaching the workloads
 * of two owners and fails. KEYWARD_FUZZ_COUNT and KEYWARD_FUZZ_SEED run it longer or elsewhere.
 */
import test from 'ava';
import { bySpecificity, checkSubject, subjectFixesOwner } from '../../src/identity/subjects.js';
import { ApiError } from '../../src/errors.js';
import { prng } from '../support/prng.js';

const GITHUB = 'https://token.actions.githubusercontent.com';
const GHE_CLOUD = 'https://token.actions.githubusercontent.com/acme-enterprise';
const GITLAB = 'https://gitlab.com';
const GOOGLE = 'https://accounts.google.com';
const OTHER = 'https://gitlab.internal.example';
const COUNT = Number(process.env.KEYWARD_FUZZ_COUNT ?? 20_000);
const SEED = Number(process.env.KEYWARD_FUZZ_SEED ?? 0x5eed_f00d);

test('a prefix must fix the issuer\'s owner part; exact subjects always do; Google\'s take no prefix', (t) => {
  const cases: Array<[string, string, boolean]> = [
    [GITHUB, 'repo:acme/*', true],
    [GITHUB, 'repo:acme/app:ref:refs/heads/*', true],
    [GHE_CLOUD, 'repo:acme/app:*', true],
    [GITHUB, 'repo:acme/app:ref:refs/heads/main', true],
    [GITHUB, 'r*', false],
    [GITHUB, 'repo:*', false],
    [GITHUB, 'repo:acme*', false],
    [GITHUB, 'repo:/*', false],
    [GITHUB, 'repo:ac:me/*', false],
    [GITHUB, 'project_path:acme/*', false],
    [GITLAB, 'project_path:acme/*', true],
    [GITLAB, 'project_path:acme/sub/proj:ref_type:branch:*', true],
    [GITLAB, 'project_path:acme*', false],
    [GITLAB, 'repo:acme/*', false],
    [GOOGLE, '1045*', false],
    [GOOGLE, '104512345678901234567', true],
    [OTHER, 'repo:acme/*', true],
    [OTHER, 'project_path:acme/*', true],
    [OTHER, 'system:serviceaccount:ns:*', false],
  ];
  for (const [issuer, subject, ok] of cases) {
    t.is(subjectFixesOwner(issuer, subject), ok, `${issuer} ${subject}`);
    const refused = refusal(issuer, subject);
    t.is(refused === undefined, ok, `${issuer} ${subject}`);
    if (refused) t.like(refused, { status: 400, code: 'invalid_request', param: 'subject' });
  }
  t.regex(refusal(GITHUB, 'r*')!.message, /repo:<owner>\//);
  t.regex(refusal(GOOGLE, '1045*')!.message, /exact/);
});

/** checkSubject's refusal, or undefined when it accepts. */
function refusal(issuer: string, subject: string): ApiError | undefined {
  try {
    checkSubject(issuer, subject);
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

test('specificity: an exact subject, then the longer prefix, then more claims', (t) => {
  const p = (subject: string, claims = 0) => ({ subject, claims: Object.fromEntries(Array.from({ length: claims }, (_, i) => [`c${i}`, 'v'])) });
  const ordered = [p('repo:acme/app:ref:refs/heads/main', 0), p('repo:acme/app:*', 2), p('repo:acme/app:*', 1), p('repo:acme/*', 5), p('repo:acme/*')];
  const shuffled = [ordered[3]!, ordered[0]!, ordered[4]!, ordered[2]!, ordered[1]!];
  t.deepEqual(shuffled.sort(bySpecificity), ordered);
  t.is(bySpecificity(p('repo:acme/*', 1), p('repo:acme/*', 1)), 0, 'equals are left to age');
});

test('property: no accepted prefix matches the workloads of two owners (seeded)', (t) => {
  const rng = prng(SEED);
  const owners = ['a', 'ac', 'acme', 'acme-corp', 'acmex', 'acme.io', 'acme_'];
  const fragments = ['repo:', 'project_path:', ...owners, '/', ':', '*', 'app', 'ref:refs/heads/', 'main', '-', '.', '..', '%2F', ' ', 'repo', 'project_path'];
  const issuers = [GITHUB, GHE_CLOUD, GITLAB, GOOGLE, OTHER];
  const subjectOf = (kind: string, owner: string) => kind === 'repo'
    ? `repo:${owner}/${rng.pick(['app', 'site', 'x'])}:ref:refs/heads/${rng.pick(['main', 'dev'])}`
    : `project_path:${owner}/${rng.pick(['app', 'group/app'])}:ref_type:branch:ref:${rng.pick(['main', 'dev'])}`;
  let accepted = 0;
  for (let i = 0; i < COUNT; i++) {
    const issuer = rng.pick(issuers);
    // Half start like a real owner form, so the rule's edge (the owner and its slash) is tried, not only noise.
    const start = rng.chance(0.5) ? `${rng.pick(['repo:', 'project_path:'])}${rng.pick(owners)}` : '';
    const prefix = start + Array.from({ length: 1 + rng.int(5) }, () => rng.pick(fragments)).join('');
    const subject = `${prefix.replaceAll('*', '')}*`;
    if (!subjectFixesOwner(issuer, subject)) continue;
    accepted++;
    t.not(issuer, GOOGLE, subject);
    const reached = new Set<string>();
    for (const kind of ['repo', 'project_path']) {
      for (const owner of owners) {
        for (let k = 0; k < 3; k++) if (subjectOf(kind, owner).startsWith(subject.slice(0, -1))) reached.add(`${kind}:${owner}`);
      }
    }
    if (reached.size > 1) t.fail(`${issuer} ${subject} reaches ${[...reached].join(', ')}`);
  }
  t.true(accepted > COUNT / 100, `only ${accepted} prefixes were accepted: the generator no longer exercises the rule`);
});
