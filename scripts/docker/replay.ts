/**
 * `npm run test:docker`: the image built the way Docker builds it, without a Docker engine, then run and checked.
 *
 *   context   the folder less what .dockerignore excludes (context.ts: Docker's matching rules)
 *   stages    the Dockerfile parsed (dockerfile.ts); each stage laid out from its own COPY lines only, from the
 *             context or `--from` an earlier stage; its RUN steps run in it, chrooted, with its ENV and USER
 *             (sandbox.ts: an overlay of this machine standing in for node:24-slim, in a private mount namespace)
 *   run       the last stage's CMD as its USER in its WORKDIR with its ENV (image.ts checks what Cloud Run relies on),
 *             then again with an example provider's folder mounted read-only into it (mounted-example.ts)
 *
 * A COPY source that .dockerignore excludes stops it here as it stops `docker build` and `gcloud builds submit`.
 *
 * Usage: tsx scripts/docker/replay.ts [--context DIR] [--stages-only]
 *   --stages-only   build the stages and stop (the fixture Dockerfiles of test/docker/ have no server to run)
 */
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyTargets, readContext, resolveSources, type BuildContext, type ResolvedSource, type SourceFile } from './context.js';
import { parseDockerfile, stageNamed, type Stage } from './dockerfile.js';
import { runImage, type BuiltStage } from './image.js';
import { runWithMountedExample } from './mounted-example.js';
import { EMULATED_BASE, enterPrivateMountNamespace, IMAGE_PATH, mountLayers, say, StageRoot, unmountLayers } from './sandbox.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');


/** `COPY --from=stage /abs/path …`: the files under that path in the earlier stage (no .dockerignore there). */
function stageSources(from: BuiltStage, sources: readonly string[]): ResolvedSource[] {
  return sources.map((source) => {
    const top = from.root.path(path.posix.resolve(from.workdir, source));
    if (!existsSync(top)) throw new Error(`COPY --from=${from.stage.name ?? from.stage.index} ${source}: not found in that stage`);
    if (!lstatSync(top).isDirectory()) return { source, isDir: false, files: [{ abs: top, rel: path.posix.basename(source) }] };
    const files: SourceFile[] = [];
    const walk = (dir: string, rel: string): void => {
      for (const name of readdirSync(dir).sort()) {
        const abs = path.join(dir, name);
        if (lstatSync(abs).isDirectory()) walk(abs, rel ? `${rel}/${name}` : name);
        else files.push({ abs, rel: rel ? `${rel}/${name}` : name });
      }
    };
    walk(top, '');
    return { source, isDir: true, files };
  });
}

async function buildStage(stage: Stage, built: BuiltStage[], ctx: BuildContext, layers: string, logDir: string, nodeBinary: string): Promise<BuiltStage> {
  if (stage.base !== EMULATED_BASE) throw new Error(`FROM ${stage.base}: the replay stands in for ${EMULATED_BASE} only (scripts/docker/sandbox.ts)`);
  const label = stage.name ?? String(stage.index);
  const root = new StageRoot(layers, `stage-${stage.index}`, nodeBinary);
  const state: BuiltStage = { stage, root, env: { PATH: IMAGE_PATH }, user: 'root', workdir: '/' };
  for (const step of stage.steps) {
    const where = `stage ${label}, Dockerfile:${step.line + 1}`;
    switch (step.kind) {
      case 'workdir':
        state.workdir = path.posix.resolve(state.workdir, step.path);
        root.mkdir(state.workdir);
        break;
      case 'env':
        for (const [k, v] of step.vars) state.env[k] = v;
        break;
      case 'user':
        state.user = step.user;
        break;
      case 'copy': {
        let resolved: ResolvedSource[];
        if (step.from !== undefined) {
          const ref = stageNamed(built.map((b) => b.stage), step.from, stage.index);
          if (!ref) throw new Error(`${where}: COPY --from=${step.from}: no earlier stage of that name (images are not pulled here)`);
          resolved = stageSources(built[ref.index]!, step.sources);
        } else {
          resolved = resolveSources(ctx, step.sources);
        }
        const owner = step.chown === undefined ? undefined : root.resolveUser(step.chown);
        const targets = copyTargets(resolved, step.dest, state.workdir, (p) => root.isDir(p));
        for (const t of targets) root.copyIn(t.from, t.to, owner);
        say(`${where}: COPY ${step.from ? `--from=${step.from} ` : ''}${step.sources.join(' ')} → ${targets.length} file(s)`);
        break;
      }
      case 'run': {
        const user = root.resolveUser(state.user);
        const log = path.join(logDir, `stage-${label}-line-${step.line + 1}.log`);
        const started = Date.now();
        const code = await root.run(step.argv ? { argv: step.argv } : { shell: step.shell! }, { env: { HOME: user.home, ...state.env }, user: user.ids, cwd: state.workdir }, log);
        if (code !== 0) {
          process.stderr.write(readFileSync(log, 'utf8').split('\n').slice(-40).join('\n') + '\n');
          throw new Error(`${where}: RUN exited ${code}`);
        }
        say(`${where}: RUN ${(step.shell ?? step.argv!.join(' ')).replace(/\s+/g, ' ').slice(0, 90)} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
        break;
      }
    }
  }
  return state;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const contextArg = argv.indexOf('--context');
  const contextDir = path.resolve(contextArg === -1 ? REPO : argv[contextArg + 1]!);
  const stagesOnly = argv.includes('--stages-only');
  const nodeBinary = path.join(REPO, 'node_modules', '.bin', 'node');
  if (!existsSync(nodeBinary)) throw new Error(`no ${nodeBinary}: run npm install first (the image's Node 24 comes from it)`);

  // Parse and check the context before anything is mounted: a Dockerfile or .dockerignore mistake fails in a second.
  const stages = parseDockerfile(readFileSync(path.join(contextDir, 'Dockerfile'), 'utf8'));
  const ctx = readContext(contextDir);
  enterPrivateMountNamespace();
  const work = mkdtempSync(path.join(tmpdir(), 'keyward-docker-replay.'));
  const layers = path.join(work, 'layers');
  const logs = path.join(work, 'logs');
  mkdirSync(logs);
  mountLayers(layers);
  const started = Date.now();
  try {
    const built: BuiltStage[] = [];
    for (const stage of stages) built.push(await buildStage(stage, built, ctx, layers, logs, nodeBinary));
    say(`${stages.length} stage(s) built (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    if (!stagesOnly) {
      await runImage(built.at(-1)!, logs, contextDir);
      await runWithMountedExample(built.at(-1)!, logs, contextDir);
    }
    say(`ok (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  } finally {
    // Unmount first (the stage roots hold binds of /dev and /proc: nothing may ever delete through them), then remove
    // only the logs; the mount points go with rmdir, which removes nothing but empty folders.
    unmountLayers(layers);
    rmSync(logs, { recursive: true, force: true });
    for (const d of [layers, work]) {
      try {
        rmdirSync(d);
      } catch {
        say(`left ${d} (still mounted or not empty)`);
      }
    }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: Error) => {
    say(`FAIL: ${err.message}`);
    process.exit(1);
  });
}
