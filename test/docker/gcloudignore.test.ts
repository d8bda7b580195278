/**
 * `gcloud builds submit` uploads this folder as .gcloudignore filters it (git's pattern rules, `gcloud topic
 * gcloudignore`), never as .dockerignore does; without a .gcloudignore it makes one from .git, .gitignore and the
 * .gitignore's own patterns. On a copy of the checkout's files with secrets planted where a developer's folder holds
 * them, the upload (matched with `ignore`, a maintained gitignore matcher; and with gcloud itself,
 * `gcloud meta list-files-for-upload`, when it is installed) keeps out every file Docker's build context keeps out
 * (but the Dockerfile and .dockerignore, which the build reads), holds every file the Dockerfile copies, and none of
 * the secrets; without the project's .gcloudignore, gcloud's default would have uploaded them.
 */
import test from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ignore from 'ignore';
import { readContext, resolveSources } from '../../scripts/docker/context.js';
import { parseDockerfile } from '../../scripts/docker/dockerfile.js';
import { ROOT } from '../support/app.js';

const GCLOUD = process.env.KEYWARD_GCLOUD ?? 'gcloud';
/** Secrets and local state a developer's checkout holds (none of them tracked by git). */
const PLANTED = [
  '.env', '.env.production', 'deploy/.env', 'kek', '.kek-1234-abcdef', 'data/kek', 'data/keyward.db', 'data/keyward.db-wal', 'data.db', 'data.db-shm',
  'server.pem', 'src/fixtures/server.pem', 'tls.key', 'console/tls.key', 'npm-debug.log', 'node_modules/x/index.js',
  'console/node_modules/x/index.js', 'dist/src/main.js', 'coverage/lcov.info', '.scratch/notes.md', '.git/config', 'bench/results/run.tmp',
];
/** Secrets among them: never uploaded. */
const SECRETS = ['.env', '.env.production', 'deploy/.env', 'kek', '.kek-1234-abcdef', 'data/kek', 'data/keyward.db', 'data.db', 'server.pem', 'src/fixtures/server.pem', 'tls.key', 'console/tls.key'];
/** Uploaded though Docker's context leaves them out: the build reads them itself. */
const BUILD_READS = ['Dockerfile', '.dockerignore'];

function filesUnder(dir: string, rel = ''): string[] {
  return readdirSync(path.join(dir, rel)).sort().flatMap((name) => {
    const r = rel ? `${rel}/${name}` : name;
    return lstatSync(path.join(dir, r)).isDirectory() ? filesUnder(dir, r) : [r];
  });
}

/** The checkout's tracked files (and the working tree's .gcloudignore), each as its path, plus the planted ones. */
function plantedCheckout(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'keyward-upload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const tracked = spawnSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).stdout.split('\0').filter(Boolean);
  for (const f of new Set([...tracked, '.gcloudignore', '.dockerignore', '.gitignore', 'Dockerfile', ...PLANTED])) {
    if (!existsSync(path.join(ROOT, f)) && !PLANTED.includes(f)) continue;
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    const real = ['.gcloudignore', '.dockerignore', '.gitignore', 'Dockerfile'].includes(f) || f.startsWith('scripts/build-console');
    writeFileSync(path.join(dir, f), real && existsSync(path.join(ROOT, f)) ? readFileSync(path.join(ROOT, f)) : `placeholder ${f}\n`);
  }
  return dir;
}

/** gcloudignore's rules (googlecloudsdk/command_lib/util/gcloudignore.py): the file's patterns, or gcloud's default. */
function uploadModel(dir: string): string[] {
  const own = path.join(dir, '.gcloudignore');
  let patterns: string;
  if (existsSync(own)) patterns = readFileSync(own, 'utf8');
  else {
    // DEFAULT_IGNORE_FILE, made when .git or .gitignore exists, with `#!include:.gitignore` when there is one.
    const gitignore = existsSync(path.join(dir, '.gitignore')) ? readFileSync(path.join(dir, '.gitignore'), 'utf8') : '';
    patterns = `.gcloudignore\n.git\n.gitignore\n${gitignore}`;
  }
  const matcher = ignore().add(patterns);
  return filesUnder(dir).filter((f) => !matcher.ignores(f));
}

/** gcloud's own answer, when it is installed. */
function uploadByGcloud(dir: string): Promise<string[] | undefined> {
  if (spawnSync(GCLOUD, ['--version'], { stdio: 'ignore' }).status !== 0) return Promise.resolve(undefined);
  const home = mkdtempSync(path.join(tmpdir(), 'keyward-gcloud-home-'));
  return new Promise((resolve, reject) => {
    const child = spawn(GCLOUD, ['meta', 'list-files-for-upload', dir], {
      env: { PATH: process.env.PATH ?? '', HOME: home, CLOUDSDK_CONFIG: path.join(home, 'gcloud'), CLOUDSDK_CORE_DISABLE_PROMPTS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('close', (code) => {
      rmSync(home, { recursive: true, force: true });
      if (code !== 0) reject(new Error(`gcloud meta list-files-for-upload: exit ${code}: ${err}`));
      else resolve(out.split('\n').map((l) => l.trim()).filter(Boolean).sort());
    });
  });
}

function gcloudMissing(t: { log(m: string): void; fail(m: string): void }): void {
  const message = 'gcloud not installed: the upload not checked against gcloud itself';
  t.log(message);
  if (!process.env.CI) t.fail(message);
}

test('the upload keeps out what the build context keeps out, holds what the Dockerfile copies, and no planted secret', async (t) => {
  t.timeout(180_000);
  const dir = plantedCheckout(t);
  const upload = uploadModel(dir);
  const uploaded = new Set(upload);
  const context = readContext(dir);
  for (const s of SECRETS) t.false(uploaded.has(s), `${s} is not uploaded`);
  const beyond = upload.filter((f) => !context.includes(f) && !BUILD_READS.includes(f));
  t.deepEqual(beyond, [], 'nothing Docker\'s context leaves out is uploaded');
  for (const f of BUILD_READS) t.true(uploaded.has(f), `${f} is uploaded: the build reads it`);

  // Cloud Build builds from the upload alone, with .dockerignore applied to it: every COPY source must be there.
  const received = mkdtempSync(path.join(tmpdir(), 'keyward-received-'));
  t.teardown(() => rmSync(received, { recursive: true, force: true }));
  for (const f of upload) cpSync(path.join(dir, f), path.join(received, f), { recursive: true });
  const built = readContext(received);
  const sources = parseDockerfile(readFileSync(path.join(dir, 'Dockerfile'), 'utf8')).flatMap((s) => s.steps.flatMap((step) => (step.kind === 'copy' && step.from === undefined ? step.sources : [])));
  t.true(sources.includes('scripts/build-console.mjs'));
  for (const r of resolveSources(built, sources)) t.true(r.files.length > 0, `COPY ${r.source}: in what Cloud Build receives`);

  const byGcloud = await uploadByGcloud(dir);
  if (byGcloud === undefined) gcloudMissing(t);
  else t.deepEqual(byGcloud, [...upload].sort(), 'gcloud uploads exactly what the model says');
});

test('without the project\'s .gcloudignore, gcloud\'s default (.git, .gitignore and the .gitignore\'s patterns) uploads the secrets', async (t) => {
  t.timeout(180_000);
  const dir = plantedCheckout(t);
  rmSync(path.join(dir, '.gcloudignore'));
  const upload = new Set(uploadModel(dir));
  for (const s of ['.env', 'kek', 'server.pem', 'data.db', 'tls.key', 'src/fixtures/server.pem']) t.true(upload.has(s), `${s} would be uploaded`);
  t.false(upload.has('data/keyward.db'), 'data/ is in .gitignore');
  const byGcloud = await uploadByGcloud(dir);
  if (byGcloud === undefined) gcloudMissing(t);
  else t.deepEqual(byGcloud, [...upload].sort(), 'gcloud\'s default, as the model has it');
});
