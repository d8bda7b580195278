/**
 * scripts/docker/replay.ts on small build contexts made here (`--stages-only`: no server to run): a COPY of an
 * excluded source stops the build as `docker build` stops; with the exception added, every stage is laid out from its
 * own COPY lines and its RUN steps really run in it, as root or its USER, without writing the host.
 * (The project's own image is built and run by `npm run test:docker`, which CI runs.)
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, tempDir } from '../support/app.js';

const DOCKERFILE = `FROM node:24-slim AS build
WORKDIR /build
COPY tool/make.mjs ./tool/make.mjs
COPY src ./src
RUN node tool/make.mjs > out.txt && test ! -e src/secret.pem && test -e src/lib/a.txt && test ! -e src/skip.log
RUN mkdir -p /replay-marker-dir && touch /replay-marker-dir/x

FROM node:24-slim AS runtime
WORKDIR /srv
COPY --from=build /build/out.txt ./
RUN mkdir -p /data && chown node:node /data
USER node
RUN test "$(id -u)" = 1000 && test "$HOME" = /home/node && grep -q '^node v24\\.' out.txt && touch /data/written-by-node
RUN test ! -e /build && test ! -e /replay-marker-dir
CMD ["node", "-e", "1"]
`;

function makeContext(t: import('ava').ExecutionContext, dockerignore: string, dockerfile = DOCKERFILE): string {
  const dir = tempDir(t, 'keyward-replay-ctx-');
  const files: Record<string, string> = {
    Dockerfile: dockerfile,
    '.dockerignore': dockerignore,
    'tool/make.mjs': "console.log('node', process.version);\n",
    'tool/other.mjs': 'throw new Error("never copied");\n',
    'src/lib/a.txt': 'a\n',
    'src/secret.pem': 'not for the image\n',
    'src/skip.log': 'log\n',
  };
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

function replay(context: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/docker/replay.ts'), '--context', context, '--stages-only'], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.once('exit', (code) => resolve({ code, stderr }));
  });
}

test('a COPY source excluded by .dockerignore stops the build, naming the source', async (t) => {
  t.timeout(120_000);
  const r = await replay(makeContext(t, 'tool\n**/*.pem\n*.log\n'));
  t.is(r.code, 1, r.stderr);
  t.regex(r.stderr, /FAIL: COPY tool\/make\.mjs: excluded by \.dockerignore, so not in the build context/);
  t.notRegex(r.stderr, /RUN /, 'nothing ran');
});

test('with the exception in .dockerignore: each stage from its own COPY lines, RUN steps run in it as root or USER, the host untouched', async (t) => {
  t.timeout(120_000);
  t.false(existsSync('/replay-marker-dir'));
  const r = await replay(makeContext(t, 'tool\n!tool/make.mjs\n**/*.pem\nsrc/*.log\n'));
  t.is(r.code, 0, r.stderr);
  t.regex(r.stderr, /stage build, Dockerfile:3: COPY tool\/make\.mjs → 1 file/);
  t.regex(r.stderr, /stage build, Dockerfile:4: COPY src → 1 file/, 'src/secret.pem and src/skip.log stay out');
  t.regex(r.stderr, /stage runtime, Dockerfile:10: COPY --from=build \/build\/out\.txt → 1 file/);
  t.regex(r.stderr, /2 stage\(s\) built/);
  // What the RUN steps wrote stayed in their stages' overlays.
  t.false(existsSync('/replay-marker-dir'));
  t.false(existsSync('/data/written-by-node'));
});

test('a failing RUN stops the build with its exit code and output', async (t) => {
  t.timeout(120_000);
  const r = await replay(makeContext(t, '', 'FROM node:24-slim\nRUN echo replay-says-no >&2 && exit 3\n'));
  t.is(r.code, 1);
  t.regex(r.stderr, /replay-says-no/);
  t.regex(r.stderr, /FAIL: stage 0, Dockerfile:2: RUN exited 3/);
});

test('a base image other than the one the replay stands in for is refused', async (t) => {
  t.timeout(120_000);
  const r = await replay(makeContext(t, '', 'FROM alpine:3\nRUN true\n'));
  t.is(r.code, 1);
  t.regex(r.stderr, /FAIL: FROM alpine:3: the replay stands in for node:24-slim only/);
});
