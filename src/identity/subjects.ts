/**
 * Trust-policy subjects: exact, or a prefix and `*` that fixes the subject's owner, so a policy can
 * only ever reach one owner's workloads. The owner part is the issuer's: GitHub Actions
 * `repo:<owner>/`, GitLab `project_path:<group>/`; Google's subjects (a service account's numeric
 * id) have no owner part and are exact only. Another issuer (GitHub Enterprise Server, a
 * self-managed GitLab) takes a prefix only in one of those two grammars. A prefix that does not fix
 * an owner is refused when written (400 `invalid_request`) and, written before this rule, matches
 * nothing. Among matching policies the most specific wins (subjectSpecificity).
 */
import { Errors } from '../errors.js';

const GITHUB = /^https:\/\/token\.actions\.githubusercontent\.com(\/[A-Za-z0-9_.-]+)?$/;
const GITLAB = 'https://gitlab.com';
const GOOGLE = 'https://accounts.google.com';

/** `repo:<owner>/…`: a GitHub owner (letters, digits, `-`, `_`, `.`) and its slash. */
const GITHUB_OWNER = /^repo:[A-Za-z0-9_.-]+\//;
/** `project_path:<group>/…`: a GitLab top-level group and its slash. */
const GITLAB_GROUP = /^project_path:[A-Za-z0-9_.-]+\//;

/** The owner grammars a prefix may use under `issuer` (none: exact subjects only). */
function ownerForms(issuer: string): Array<{ form: RegExp; shape: string }> {
  const github = { form: GITHUB_OWNER, shape: '`repo:<owner>/`' };
  const gitlab = { form: GITLAB_GROUP, shape: '`project_path:<group>/`' };
  if (GITHUB.test(issuer)) return [github];
  if (issuer === GITLAB) return [gitlab];
  if (issuer === GOOGLE) return [];
  return [github, gitlab];
}

const isPrefix = (subject: string): boolean => subject.endsWith('*');

/** Does a `prefix*` subject fix its owner under this issuer? (An exact subject always qualifies.) */
export function subjectFixesOwner(issuer: string, subject: string): boolean {
  if (!isPrefix(subject)) return true;
  const prefix = subject.slice(0, -1);
  return ownerForms(issuer).some(({ form }) => form.test(prefix));
}

/** 400 `invalid_request` on `subject` unless it is exact or a prefix that fixes the owner (the error says which form). */
export function checkSubject(issuer: string, subject: string): void {
  if (subjectFixesOwner(issuer, subject)) return;
  const forms = ownerForms(issuer);
  throw Errors.invalidRequest(forms.length === 0
    ? 'This issuer\'s subjects take no prefix: name the exact `subject`.'
    : `A \`subject\` prefix must fix the owner: start it with ${forms.map((f) => f.shape).join(' or ')} (such as \`repo:acme/*\`), or name the exact subject.`, 'subject');
}

/**
 * How narrowly a policy's subject and claims pick workloads: an exact subject over any prefix, a longer
 * prefix over a shorter one, then more pinned claims. Compared as a tuple, larger is more specific.
 */
export function subjectSpecificity(p: { subject: string; claims: Record<string, unknown> }): [number, number, number] {
  const exact = isPrefix(p.subject) ? 0 : 1;
  return [exact, exact ? 0 : p.subject.length - 1, Object.keys(p.claims).length];
}

/** Orders by specificity, most specific first. */
export function bySpecificity(a: { subject: string; claims: Record<string, unknown> }, b: typeof a): number {
  const x = subjectSpecificity(a);
  const y = subjectSpecificity(b);
  return y[0] - x[0] || y[1] - x[1] || y[2] - x[2];
}
