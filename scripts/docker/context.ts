/**
 * The build context as Docker sends it, and COPY's sources resolved against it as BuildKit resolves them.
 *
 * The context is the folder less what .dockerignore excludes, matched with @balena/dockerignore: a port of moby's
 * matching rules (test/docker/dockerignore.test.ts runs moby/patternmatcher's own table against it and names the
 * cases where it differs, none of which this project's .dockerignore may use), case-sensitive as Docker is on Linux.
 * A COPY source that is excluded, missing, or outside the context stops the build, as `docker build` and
 * `gcloud builds submit` stop.
 */
// A CommonJS module typed as an ES default export: its `default` is the factory either way.
import dockerignore from '@balena/dockerignore';
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export class ContextError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContextError';
  }
}

export interface BuildContext {
  dir: string;
  /** The .dockerignore patterns as moby's ignorefile.ReadAll reads them (comments and blank lines dropped). */
  patterns: string[];
  /** `rel` (slash-separated, relative to the context) is sent to the builder. */
  includes(rel: string): boolean;
}

/** A file (or symlink) a COPY source brings: where it is on disk, and its path relative to the source. */
export interface SourceFile {
  abs: string;
  rel: string;
}

export interface ResolvedSource {
  source: string;
  isDir: boolean;
  files: SourceFile[];
}

/** moby's ignorefile.ReadAll: a UTF-8 BOM stripped, `#` lines skipped, the rest trimmed; a lone `!` is an error. */
export function readDockerignore(text: string): string[] {
  const patterns: string[] = [];
  for (const raw of text.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    if (raw.startsWith('#')) continue;
    const pattern = raw.trim();
    if (pattern === '') continue;
    if (pattern === '!' || /^!\s*$/.test(pattern)) throw new ContextError('.dockerignore: illegal exclusion pattern: "!"');
    patterns.push(pattern);
  }
  return patterns;
}

/** The context `dir` with its own .dockerignore, or with `ignoreFile` (such a file's text) instead. */
export function readContext(dir: string, ignoreFile?: string): BuildContext {
  const file = path.join(dir, '.dockerignore');
  const patterns = readDockerignore(ignoreFile ?? (existsSync(file) ? readFileSync(file, 'utf8') : ''));
  const matcher = dockerignore.default({ ignorecase: false }).add(patterns);
  return { dir, patterns, includes: (rel) => !matcher.ignores(rel) };
}

/** A COPY source as a context-relative path: `./a/../b/` → `b`; wildcards and paths leaving the context refused. */
function contextPath(source: string): string {
  if (/[*?[]/.test(source)) throw new ContextError(`COPY ${source}: wildcards are not replayed (name the files)`);
  const rel = path.posix.normalize(source.replace(/^\/+/, '')).replace(/\/+$/, '');
  if (rel === '..' || rel.startsWith('../')) throw new ContextError(`COPY ${source}: outside the build context`);
  return rel === '.' ? '' : rel;
}

function walk(ctx: BuildContext, absDir: string, relToContext: string, relToSource: string, out: SourceFile[]): void {
  for (const name of readdirSync(absDir).sort()) {
    const abs = path.join(absDir, name);
    const rel = relToContext ? `${relToContext}/${name}` : name;
    const relSource = relToSource ? `${relToSource}/${name}` : name;
    if (!lstatSync(abs).isDirectory()) {
      if (ctx.includes(rel)) out.push({ abs, rel: relSource });
    } else if (ctx.includes(rel) || ctx.patterns.some((p) => p.startsWith('!'))) {
      // An excluded folder is walked only when an exception (`!…`) could bring a file inside it back.
      walk(ctx, abs, rel, relSource, out);
    }
  }
}

/** Each source's files as the builder has them; throws naming the first source that is excluded or missing. */
export function resolveSources(ctx: BuildContext, sources: readonly string[]): ResolvedSource[] {
  return sources.map((source) => {
    const rel = contextPath(source);
    const abs = path.join(ctx.dir, rel);
    if (!existsSync(abs)) throw new ContextError(`COPY ${source}: not found in the build context`);
    if (!lstatSync(abs).isDirectory()) {
      if (!ctx.includes(rel)) throw new ContextError(`COPY ${source}: excluded by .dockerignore, so not in the build context`);
      return { source, isDir: false, files: [{ abs, rel: path.posix.basename(rel) }] };
    }
    const files: SourceFile[] = [];
    walk(ctx, abs, rel, '', files);
    if (files.length === 0 && rel !== '' && !ctx.includes(rel)) throw new ContextError(`COPY ${source}: excluded by .dockerignore, so not in the build context`);
    return { source, isDir: true, files };
  });
}

/**
 * Where COPY puts each file in the image (Docker's rules): relative destinations start at WORKDIR; a directory
 * source's contents go into the destination; a file goes to the destination, or into it when it ends in `/` or is
 * an existing directory; several sources need a destination ending in `/`.
 */
export function copyTargets(resolved: readonly ResolvedSource[], dest: string, workdir: string, isDirInImage: (imagePath: string) => boolean): Array<{ from: string; to: string }> {
  const base = path.posix.resolve(workdir, dest);
  const intoDir = dest.endsWith('/') || dest === '.' || isDirInImage(base);
  if (resolved.length > 1 && !dest.endsWith('/')) throw new ContextError(`COPY ${resolved.map((r) => r.source).join(' ')} ${dest}: with several sources the destination must end in /`);
  const out: Array<{ from: string; to: string }> = [];
  for (const r of resolved) {
    for (const f of r.files) {
      const to = r.isDir ? path.posix.join(base, f.rel) : intoDir ? path.posix.join(base, f.rel) : base;
      out.push({ from: f.abs, to });
    }
  }
  return out;
}
