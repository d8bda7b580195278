/**
 * Test support: a page's shell blocks run as a reader runs them, top to bottom in one shell, without touching
 * anything. bash runs the blocks as written (variables, loops, heredocs, `$(…)`), in a scratch folder, with a PATH
 * of a few harmless tools only (cat, mkdir, tr, sed, git on the checkout); `gcloud` is a shell function that
 * records its arguments exactly as the shell passed them (and prints a sample answer for the few queries pages
 * read into variables); any other command (curl, aws, az, docker, openssl, jq, npx …) is recorded by bash's
 * command-not-found hook and does nothing. What comes back is each gcloud invocation with the page line it came
 * from, for a model of the cloud (gcloud-run-model.ts) to apply.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'zsh']);
const SAFE_TOOLS = ['cat', 'mkdir', 'tr', 'sed', 'head', 'tail', 'printf', 'echo', 'true', 'dirname', 'basename'];

export interface ShellBlock {
  file: string;
  /** The page line of the block's first line. */
  line: number;
  /** The anchor of the heading the block sits under (GitHub's). */
  section: string;
  text: string;
}

export interface Invocation {
  argv: string[];
  /** `file:line` of the page line the command sits on. */
  where: string;
}

/** GitHub's anchor for a heading's text (as test/docs/links.test.ts checks them). */
export function slug(heading: string): string {
  const text = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '').replace(/<[^>]+>/g, '');
  return text.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The page's sh/bash fenced blocks, in order, each with the section (heading anchor) it sits under. */
export function shellBlocks(markdown: string, file: string): ShellBlock[] {
  const out: ShellBlock[] = [];
  const lines = markdown.split('\n');
  const seen = new Map<string, number>();
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const fence = /^\s*```\s*([A-Za-z]*)/.exec(lines[i]!);
    if (fence) {
      const start = i + 1;
      let end = start;
      while (end < lines.length && !/^\s*```/.test(lines[end]!)) end++;
      if (SHELL_LANGS.has(fence[1]!.toLowerCase())) out.push({ file, line: start + 1, section, text: lines.slice(start, end).join('\n') });
      i = end;
      continue;
    }
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(lines[i]!);
    if (heading) {
      const base = slug(heading[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      section = n === 0 ? base : `${base}-${n}`;
    }
  }
  return out;
}

/** Every heading's anchor, in page order (repeats numbered as GitHub numbers them). */
export function headingAnchors(markdown: string): string[] {
  const seen = new Map<string, number>();
  const out: string[] = [];
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.push(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The `#anchor` links in the prose of one section of the page (the steps it tells the reader to run again). */
export function sectionLinks(markdown: string, anchor: string): string[] {
  const lines = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').split('\n');
  const start = lines.findIndex((l) => /^#{1,6}\s/.test(l) && slug(l.replace(/^#+\s+/, '')) === anchor);
  if (start < 0) return [];
  const level = /^#+/.exec(lines[start]!)![0].length;
  const body: string[] = [];
  for (const l of lines.slice(start + 1)) {
    const h = /^(#+)\s/.exec(l);
    if (h && h[1]!.length <= level) break;
    body.push(l);
  }
  return [...body.join('\n').matchAll(/\]\(#([^)\s]+)\)/g)].map((m) => m[1]!);
}

/**
 * What a page says a later deploy is: the section whose heading names it (its own blocks run, and the steps its prose
 * links to, `[step 9](#9-deploy)`), or else the paragraph that names it and the steps it names by number ("step 6 and
 * step 7 again"). Anchors in the order the reader meets them.
 */
export function laterDeploy(markdown: string): { section: string | undefined; steps: string[] } {
  const anchors = headingAnchors(markdown);
  const section = anchors.find((a) => /later-deploy/.test(a));
  if (section !== undefined) return { section, steps: sectionLinks(markdown, section) };
  const prose = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const paragraph of prose.split(/\n\s*\n/).filter((p) => /\blater deploy/i.test(p))) {
    const numbers = [...paragraph.matchAll(/\bsteps? ((?:\d+(?:,\s*|\s+and\s+)?)+)/gi)].flatMap((m) => m[1]!.match(/\d+/g) ?? []);
    const links = [...paragraph.matchAll(/\]\(#([^)\s]+)\)/g)].map((m) => m[1]!);
    const steps = [...links, ...numbers.flatMap((n) => anchors.filter((a) => a.startsWith(`${n}-`)).slice(0, 1))];
    if (steps.length > 0) return { section: undefined, steps };
  }
  return { section: undefined, steps: [] };
}

/** Sample answers for commands whose output a page reads into a variable: [a fragment of the arguments, the answer]. */
export type Samples = Array<[string, string]>;

/**
 * Runs the blocks in order in one bash, in `cwd` (its files are the reader's checkout: copy in what the pages
 * read), and returns every gcloud invocation, and every other command the pages run (by name).
 */
export function replay(blocks: ShellBlock[], options: { cwd: string; root: string; samples: Samples }): { gcloud: Invocation[]; others: Invocation[]; stderr: string } {
  const work = mkdtempSync(path.join(tmpdir(), 'keyward-replay-'));
  try {
    const bin = path.join(work, 'bin');
    mkdirSync(bin);
    for (const tool of SAFE_TOOLS) {
      const found = ['/usr/bin', '/bin'].map((d) => path.join(d, tool)).find((p) => existsSync(p));
      if (found) symlinkSync(found, path.join(bin, tool));
    }
    const log = path.join(work, 'log');
    const where: string[] = [];
    const script: string[] = [];
    const emit = (line: string, at: string) => {
      script.push(line);
      where.push(at);
    };
    const header = [
      'set +e',
      `KW_LOG=${sq(log)}`,
      `git() { command ${sq(gitPath())} -C ${sq(options.root)} "$@"; }`,
      'kw_record() { local kind=$1; shift; printf "%s\\0" "@@$kind" "${BASH_LINENO[1]}" "$@" "@@end" >> "$KW_LOG"; }',
      'gcloud() {',
      '  kw_record gcloud gcloud "$@"',
      '  case "$*" in',
      ...options.samples.map(([fragment, answer]) => `    *${sq(fragment)}*) printf '%s\\n' ${sq(answer)} ;;`),
      '  esac',
      '  return 0',
      '}',
      'command_not_found_handle() { kw_record other "$@"; return 0; }',
    ];
    for (const h of header) emit(h, '');
    for (const b of blocks) {
      b.text.split('\n').forEach((l, i) => emit(l, `${b.file}:${b.line + i}`));
      emit('', '');
    }
    const scriptFile = path.join(work, 'replay.sh');
    writeFileSync(scriptFile, script.join('\n') + '\n');
    const r = spawnSync('/bin/bash', [scriptFile], { cwd: options.cwd, env: { PATH: bin, HOME: work, LANG: 'C.UTF-8' }, encoding: 'utf8', input: '' });
    const gcloud: Invocation[] = [];
    const others: Invocation[] = [];
    const fields = existsSync(log) ? readFileSync(log, 'utf8').split('\0') : [];
    for (let i = 0; i < fields.length;) {
      const kind = fields[i++];
      if (kind !== '@@gcloud' && kind !== '@@other') break;
      const line = Number(fields[i++]);
      const argv: string[] = [];
      while (i < fields.length && fields[i] !== '@@end') argv.push(fields[i++]!);
      i++;
      const inv = { argv, where: where[line - 1] || `replay.sh:${line}` };
      (kind === '@@gcloud' ? gcloud : others).push(inv);
    }
    return { gcloud, others, stderr: r.stderr };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A scratch copy of the reader's checkout with only the given files (relative to root). */
export function scratchCheckout(root: string, files: string[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'keyward-checkout-'));
  for (const f of files) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), readFileSync(path.join(root, f)));
  }
  return dir;
}

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function gitPath(): string {
  const r = spawnSync('/bin/sh', ['-c', 'command -v git'], { encoding: 'utf8' });
  return r.stdout.trim() || '/usr/bin/git';
}
