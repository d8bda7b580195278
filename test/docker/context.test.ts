/**
 * The build context and COPY resolution (scripts/docker/context.ts) and the Dockerfile reading
 * (scripts/docker/dockerfile.ts), on the project's own files and on small contexts made here.
 */
import test from 'ava';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { copyTargets, readContext, resolveSources } from '../../scripts/docker/context.js';
import { parseDockerfile } from '../../scripts/docker/dockerfile.js';
import { ROOT, tempDir } from '../support/app.js';

const DOCKERFILE = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const DOCKERIGNORE = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8');

function contextSources(): string[][] {
  return parseDockerfile(DOCKERFILE).flatMap((s) => s.steps.flatMap((step) => (step.kind === 'copy' && step.from === undefined ? [step.sources] : [])));
}

test("every COPY source of the project's Dockerfile is in its build context", (t) => {
  const ctx = readContext(ROOT);
  const sources = contextSources();
  t.true(sources.flat().includes('scripts/build-console.mjs'));
  for (const s of sources) {
    for (const r of resolveSources(ctx, s)) t.true(r.files.length > 0, r.source);
  }
  // What the image may never hold, though it is in the folder.
  t.false(ctx.includes('node_modules/x/index.js'));
  t.false(ctx.includes('console/node_modules/x/index.js'));
  t.false(ctx.includes('src/fixtures/server.pem'));
  t.false(ctx.includes('data/keyward.db'));
  t.false(ctx.includes('scripts/demo.ts'));
  t.false(ctx.includes('.env.production'));
});

test('the issue-31 .dockerignore (scripts/ excluded, no exception) stops the build at COPY scripts/build-console.mjs', (t) => {
  const before = DOCKERIGNORE.split('\n').filter((l) => l !== '!scripts/build-console.mjs').join('\n');
  t.not(before, DOCKERIGNORE);
  const ctx = readContext(ROOT, before);
  const err = t.throws(() => contextSources().forEach((s) => resolveSources(ctx, s)));
  t.is(err?.message, 'COPY scripts/build-console.mjs: excluded by .dockerignore, so not in the build context');
});

test("Docker's rules, not git's: top-level patterns, **/ at any depth, exceptions, folders copied without their excluded files", (t) => {
  const dir = tempDir(t);
  for (const f of ['a.pem', 'src/b.pem', 'src/keep.ts', 'src/deep/c.key', 'tools/x.mjs', 'tools/y.mjs', 'notes.log']) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), f);
  }
  const ctx = readContext(dir, '*.pem\n**/*.key\ntools\n!tools/x.mjs\n');
  t.false(ctx.includes('a.pem'));
  t.true(ctx.includes('src/b.pem'), '`*.pem` matches only at the top of the context');
  t.false(ctx.includes('src/deep/c.key'));
  const [src] = resolveSources(ctx, ['./src/']);
  t.deepEqual(src!.files.map((f) => f.rel), ['b.pem', 'keep.ts']);
  const [tools] = resolveSources(ctx, ['tools']);
  t.deepEqual(tools!.files.map((f) => f.rel), ['x.mjs'], 'an excluded folder brings back only its exceptions');
  t.is(resolveSources(ctx, ['tools/x.mjs'])[0]!.files.length, 1);
  t.throws(() => resolveSources(ctx, ['tools/y.mjs']), { message: 'COPY tools/y.mjs: excluded by .dockerignore, so not in the build context' });
  t.throws(() => resolveSources(ctx, ['a.pem']), { message: /a\.pem: excluded by \.dockerignore/ });
  t.throws(() => resolveSources(ctx, ['missing.txt']), { message: 'COPY missing.txt: not found in the build context' });
  t.throws(() => resolveSources(ctx, ['../etc/passwd']), { message: /outside the build context/ });
  t.throws(() => resolveSources(ctx, ['src/../../x']), { message: /outside the build context/ });
  t.throws(() => resolveSources(ctx, ['src/*.ts']), { message: /wildcards are not replayed/ });
  const allExcluded = readContext(dir, 'tools\n');
  t.throws(() => resolveSources(allExcluded, ['tools']), { message: /COPY tools: excluded by \.dockerignore/ });
});

test("COPY destinations follow Docker's rules", (t) => {
  const file = (rel: string) => ({ source: rel, isDir: false, files: [{ abs: `/ctx/${rel}`, rel: path.posix.basename(rel) }] });
  const dir = { source: 'src', isDir: true, files: [{ abs: '/ctx/src/a.ts', rel: 'a.ts' }, { abs: '/ctx/src/d/b.ts', rel: 'd/b.ts' }] };
  const no = () => false;
  t.deepEqual(copyTargets([file('package.json'), file('package-lock.json')], './', '/app', no).map((x) => x.to), ['/app/package.json', '/app/package-lock.json']);
  t.deepEqual(copyTargets([dir], './src', '/app', no).map((x) => x.to), ['/app/src/a.ts', '/app/src/d/b.ts']);
  t.deepEqual(copyTargets([file('scripts/build-console.mjs')], './scripts/build-console.mjs', '/app', no).map((x) => x.to), ['/app/scripts/build-console.mjs']);
  t.deepEqual(copyTargets([file('x.txt')], '/etc/app', '/app', (p) => p === '/etc/app').map((x) => x.to), ['/etc/app/x.txt'], 'an existing folder takes the file in');
  t.deepEqual(copyTargets([file('x.txt')], 'y.txt', '/', no).map((x) => x.to), ['/y.txt']);
  t.throws(() => copyTargets([file('a'), file('b')], '/dest', '/', no), { message: /must end in \// });
});

test('the Dockerfile reader refuses what the replay cannot do as Docker does, naming the line', (t) => {
  const from = 'FROM node:24-slim AS b\n';
  const refuses = (body: string, message: RegExp) => t.throws(() => parseDockerfile(from + body), { message }, body);
  refuses('ADD x /x\n', /Dockerfile:2: ADD is not replayed/);
  refuses('CMD node main.js\n', /Dockerfile:2: CMD in shell form: \/bin\/sh would be PID 1/);
  refuses('COPY --chmod=755 a /a\n', /COPY --chmod is not replayed/);
  refuses('RUN --mount=type=cache,target=/r npm ci\n', /RUN --mount is not replayed/);
  refuses('ENV A=$HOME\n', /variables are not replayed/);
  refuses('ARG V=1\n', /ARG is not replayed/);
  t.throws(() => parseDockerfile('RUN true\n'), { message: /RUN before FROM/ });

  const [stage] = parseDockerfile(`${from}WORKDIR /app\nENV A=1 B="two words"\nCOPY ["a b", "c", "./"]\nRUN echo 'x \\\n  y' && true\nRUN ["node", "-e", "1"]\nUSER node\nEXPOSE 8080\nCMD ["node", "x.js"]\n`);
  t.is(stage!.name, 'b');
  t.deepEqual(stage!.steps.map((s) => s.kind), ['workdir', 'env', 'copy', 'run', 'run', 'user']);
  t.deepEqual(stage!.steps[1], { kind: 'env', vars: [['A', '1'], ['B', 'two words']], line: 2 });
  t.deepEqual(stage!.steps[2], { kind: 'copy', from: undefined, chown: undefined, sources: ['a b', 'c'], dest: './', line: 3 });
  t.deepEqual(stage!.steps[3], { kind: 'run', argv: undefined, shell: "echo 'x   y' && true", line: 4 });
  t.deepEqual(stage!.steps[4], { kind: 'run', argv: ['node', '-e', '1'], shell: undefined, line: 6 });
  t.deepEqual(stage!.cmd, ['node', 'x.js']);
  t.deepEqual(stage!.expose, [8080]);
});
