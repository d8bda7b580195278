/**
 * @balena/dockerignore (what scripts/docker/context.ts matches .dockerignore with) against Docker's own rules: the
 * pattern table of moby/patternmatcher's patternmatcher_test.go (TestMatches, the matcher BuildKit and the Docker
 * CLI use today), case for case. The port follows moby v19.03; where the current matcher differs, the case is named
 * below with the reason, and the project's .dockerignore is checked to use none of those features.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import dockerignore from '@balena/dockerignore';
import { readDockerignore } from '../../scripts/docker/context.js';
import { ROOT } from '../support/app.js';

type Case = [pattern: string | string[], text: string, ignored: boolean];

// moby/patternmatcher TestMatches: `tests` and `multiPatternTests` (text is a context path; true = excluded).
const MOBY: Case[] = [
  ['**', 'file', true], ['**', 'file/', true], ['**/', 'file', true], ['**/', 'file/', true], ['**', '/', true], ['**/', '/', true],
  ['**', 'dir/file', true], ['**/', 'dir/file', true], ['**', 'dir/file/', true], ['**/', 'dir/file/', true], ['**/**', 'dir/file', true],
  ['**/**', 'dir/file/', true], ['dir/**', 'dir/file', true], ['dir/**', 'dir/file/', true], ['dir/**', 'dir/dir2/file', true],
  ['dir/**', 'dir/dir2/file/', true], ['**/dir', 'dir', true], ['**/dir', 'dir/file', true], ['**/dir2/*', 'dir/dir2/file', true],
  ['**/dir2/*', 'dir/dir2/file/', true], ['**/dir2/**', 'dir/dir2/dir3/file', true], ['**/dir2/**', 'dir/dir2/dir3/file/', true],
  ['**file', 'file', true], ['**file', 'dir/file', true], ['**/file', 'dir/file', true], ['**file', 'dir/dir/file', true],
  ['**/file', 'dir/dir/file', true], ['**/file*', 'dir/dir/file', true], ['**/file*', 'dir/dir/file.txt', true],
  ['**/file*txt', 'dir/dir/file.txt', true], ['**/file*.txt', 'dir/dir/file.txt', true], ['**/file*.txt*', 'dir/dir/file.txt', true],
  ['**/**/*.txt', 'dir/dir/file.txt', true], ['**/**/*.txt2', 'dir/dir/file.txt', false], ['**/*.txt', 'file.txt', true],
  ['**/**/*.txt', 'file.txt', true], ['a**/*.txt', 'a/file.txt', true], ['a**/*.txt', 'a/dir/file.txt', true],
  ['a**/*.txt', 'a/dir/dir/file.txt', true], ['a/*.txt', 'a/dir/file.txt', false], ['a/*.txt', 'a/file.txt', true],
  ['a/*.txt**', 'a/file.txt', true], ['a[b-d]e', 'ae', false], ['a[b-d]e', 'ace', true], ['a[b-d]e', 'aae', false],
  ['a[^b-d]e', 'aze', true], ['.*', '.foo', true], ['.*', 'foo', false], ['abc.def', 'abcdef', false], ['abc.def', 'abc.def', true],
  ['abc.def', 'abcZdef', false], ['abc?def', 'abcZdef', true], ['abc?def', 'abcdef', false], ['a\\\\', 'a\\', true],
  ['**/foo/bar', 'foo/bar', true], ['**/foo/bar', 'dir/foo/bar', true], ['**/foo/bar', 'dir/dir2/foo/bar', true],
  ['abc/**', 'abc', false], ['abc/**', 'abc/def', true], ['abc/**', 'abc/def/ghi', true], ['**/.foo', '.foo', true],
  ['**/.foo', 'bar.foo', false], ['a(b)c/def', 'a(b)c/def', true], ['a(b)c/def', 'a(b)c/xyz', false], ['a.|)$(}+{bc', 'a.|)$(}+{bc', true],
  ['dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl', 'dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl', true],
  ['dist/*.whl', 'dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl', true], ['a\\*b', 'a*b', true],
  [['**', '!util/docker/web'], 'util/docker/web/foo', false],
  [['**', '!util/docker/web', 'util/docker/web/foo'], 'util/docker/web/foo', true],
  [['**', '!dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl'], 'dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl', false],
  [['**', '!dist/*.whl'], 'dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl', false],
  // The single-pattern tests around it (TestPatternMatchesFolderExclusions and neighbours).
  [['docs', '!docs/README.md'], 'docs/README.md', false], [['docs/', '!docs/README.md'], 'docs/README.md', false],
  [['docs/*', '!docs/README.md'], 'docs/README.md', false], [['*.go', '!fileutils.go'], 'fileutils.go', false],
  [['!fileutils.go', '*.go'], 'fileutils.go', true], [['*'], 'fileutils.go', true], [['*.go'], 'fileutils.go', true],
];

/** Where the port (moby v19.03's regex builder) and today's matcher disagree, and why. */
const KNOWN_DIFFERENCES = new Map<string, string>([
  ['**/dir2/* dir/dir2/file/', 'a context path never ends in "/": not a case a build can meet'],
  ['a(b)c/def a(b)c/def', 'regex metacharacters ( ) | + { } are not escaped (moby fixed it in 2022)'],
  ['a.|)$(}+{bc a.|)$(}+{bc', 'regex metacharacters ( ) | + { } are not escaped (an invalid regex here)'],
  ['dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl', 'regex metacharacter + is not escaped'],
  ['**,!dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl', 'regex metacharacter + is not escaped'],
]);
const UNESCAPED = /[()|+{}]/;

function ignores(patterns: string[], text: string): boolean | string {
  try {
    return dockerignore.default({ ignorecase: false }).add(patterns).ignores(text);
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

test("@balena/dockerignore agrees with moby/patternmatcher's table but for the named differences", (t) => {
  let agreed = 0;
  for (const [pattern, text, ignored] of MOBY) {
    const patterns = Array.isArray(pattern) ? pattern : [pattern];
    const key = `${patterns.join(',')} ${text}`;
    const got = ignores(patterns, text);
    if (KNOWN_DIFFERENCES.has(key)) {
      t.not(got, ignored, `${key} now agrees with moby: drop it from KNOWN_DIFFERENCES`);
      continue;
    }
    t.is(got, ignored, key);
    agreed++;
  }
  t.is(agreed, MOBY.length - KNOWN_DIFFERENCES.size);
});

test('matching is case-sensitive, as Docker is on Linux (the library defaults to case-insensitive; the replay turns that off)', (t) => {
  t.false(ignores(['Scripts'], 'scripts/build-console.mjs'));
  t.true(ignores(['scripts'], 'scripts/build-console.mjs'));
  t.true(dockerignore.default().add(['Scripts']).ignores('scripts/x'), 'the default would be wrong for Docker on Linux');
});

test("the project's .dockerignore uses none of the features where the library differs from moby", (t) => {
  const patterns = readDockerignore(readFileSync(path.join(ROOT, '.dockerignore'), 'utf8'));
  t.true(patterns.length > 10);
  for (const p of patterns) t.false(UNESCAPED.test(p), `${p}: regex metacharacters are matched differently by the library`);
});

test('moby ignorefile.ReadAll: BOM, comments only at the start of a line, trimming, a lone "!" refused', (t) => {
  t.deepEqual(readDockerignore('\uFEFF# c\n a \n\n!b  \n  # not a comment\r\nc/\n'), ['a', '!b', '# not a comment', 'c/']);
  t.throws(() => readDockerignore('a\n!\n'), { message: /illegal exclusion pattern/ });
});
