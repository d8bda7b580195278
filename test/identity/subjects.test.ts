/**
 * Trust-policy subjects (src/identity/subjects.ts): which prefixes fix the owner for each issuer, the
 * order of specificity, and a property test (fast-check, test/support/property.ts) that tries to write a
 * prefix reaching the workloads of two owners and fails: about 20,000 cases, KEYWARD_FUZZ_COUNT for more; a
 * failure shrinks to the shortest such prefix and prints its seed and path (replay: KEYWARD_PROPERTY_SEED,
 * KEYWARD_PROPERTY_PATH).
 */
import test from 'ava';
import { bySpecificity, checkSubject, subjectFixesOwner } from '../../src/identity/subjects.js';
import fc from 'fast-check';
import { ApiError } from '../../src/errors.js';
import { checkProperty, envInt, maybe } from '../support/property.js';

const GITHUB = 'https://token.actions.githubusercontent.com';
const GHE_CLOUD = 'https://token.actions.githubusercontent.com/acme-enterprise';
const GITLAB = 'https://gitlab.com';
const GOOGLE = 'https://accounts.google.com';
const OTHER = 'https://gitlab.internal.example';
const COUNT = envInt('KEYWARD_FUZZ_COUNT', 20_000);

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

const OWNERS = ['a', 'ac', 'acme', 'acme-corp', 'acmex', 'acme.io', 'acme_'];
const FRAGMENTS = ['repo:', 'project_path:', ...OWNERS, '/', ':', '*', 'app', 'ref:refs/heads/', 'main', '-', '.', '..', '%2F', ' ', 'repo', 'project_path'];

/** Every owner's workloads, in both issuers' forms: what a prefix must not reach for two owners at once. */
const WORKLOADS = ['repo', 'project_path'].flatMap((kind) => OWNERS.flatMap((owner) => (kind === 'repo'
  ? ['app', 'site', 'x'].flatMap((repo) => ['main', 'dev'].map((branch) => `repo:${owner}/${repo}:ref:refs/heads/${branch}`))
  : ['app', 'group/app'].flatMap((project) => ['main', 'dev'].map((branch) => `project_path:${owner}/${project}:ref_type:branch:ref:${branch}`))
).map((subject) => ({ reaches: `${kind}:${owner}`, subject }))));

/** A subject prefix: half of them start like a real owner form, so the rule's edge (the owner and its slash) is tried, not only noise. */
const candidate = fc.record({
  issuer: fc.constantFrom(GITHUB, GHE_CLOUD, GITLAB, GOOGLE, OTHER),
  start: maybe(0.5, fc.tuple(fc.constantFrom('repo:', 'project_path:'), fc.constantFrom(...OWNERS)).map(([form, owner]) => form + owner)),
  fragments: fc.array(fc.constantFrom(...FRAGMENTS), { minLength: 1, maxLength: 5 }),
});

test('property: no accepted prefix matches the workloads of two owners', async (t) => {
  let tried = 0;
  let accepted = 0;
  // Candidates come in batches of up to 20 (cheaper for fast-check than a run each; a failure shrinks to one).
  const property = fc.property(fc.array(candidate, { minLength: 1, maxLength: 20, size: 'max' }), (batch) => {
    for (const { issuer, start, fragments } of batch) {
      tried++;
      const subject = `${((start ?? '') + fragments.join('')).replaceAll('*', '')}*`;
      if (!subjectFixesOwner(issuer, subject)) continue;
      accepted++;
      if (issuer === GOOGLE) throw new Error(`Google takes no prefix, yet ${subject} was accepted`);
      const reached = new Set(WORKLOADS.filter((w) => w.subject.startsWith(subject.slice(0, -1))).map((w) => w.reaches));
      if (reached.size > 1) throw new Error(`${issuer} ${subject} reaches ${[...reached].join(', ')}`);
    }
  });
  if (!(await checkProperty(t, property, { numRuns: Math.ceil(COUNT / 10) }))) return;
  t.log(`${accepted} of ${tried} prefixes accepted`);
  t.true(accepted > tried / 100, `only ${accepted} of ${tried} prefixes were accepted: the generator no longer exercises the rule`);
});
