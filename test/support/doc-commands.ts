/**
 * Test support: what a Markdown page tells a person to type. The shell lines of a section (`shellLinesUnder`, for
 * a test that runs them as written), and the cloud CLI commands (`gcloud`, `aws`, `az`) of a page as they would
 * type them: from its sh/bash code blocks (continuation lines joined, each command cut where the shell would end
 * it: a pipe, `;`, `&&`, `||`, a comment, the `)` closing the `$(` it sits in) and from inline code spans, with the
 * `for VAR in …` loop values each one runs under, and the page's own variable assignments (the prelude a reader's
 * shell would hold when they reach the command).
 */
export interface DocCommand {
  cli: 'gcloud' | 'aws' | 'az';
  /** The command as the page writes it (variables unexpanded). */
  text: string;
  file: string;
  line: number;
  /** Loop variables in force, each value the loop gives it. */
  loops: Array<{ name: string; values: string[] }>;
}

const CLIS = ['gcloud', 'aws', 'az'] as const;
const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'zsh']);

/** Where the command that starts at `start` ends in `line` (quotes and `$(…)` nesting respected). */
function commandEnd(line: string, start: number): number {
  let quote: '"' | "'" | undefined;
  let depth = 0;
  for (let i = start; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = undefined;
      else if (quote === '"' && c === '$' && line[i + 1] === '(') {
        depth++;
        i++;
      } else if (quote === '"' && c === ')' && depth > 0) depth--;
      continue;
    }
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === "'" || c === '"') quote = c;
    else if (c === '$' && line[i + 1] === '(') {
      depth++;
      i++;
    } else if (c === ')') {
      if (depth === 0) return i;
      depth--;
    } else if (depth === 0 && (c === '|' || c === ';' || (c === '&' && line[i + 1] === '&'))) return i;
    else if (depth === 0 && c === '#' && /\s/.test(line[i - 1] ?? ' ')) return i;
  }
  return line.length;
}

/** Each CLI command in one logical shell line: a CLI word at a command position. */
function commandsInLine(line: string): Array<{ cli: DocCommand['cli']; text: string }> {
  const out: Array<{ cli: DocCommand['cli']; text: string }> = [];
  const pattern = new RegExp(`(^\\s*|[|;&(]\\s*|\\$\\(\\s*|\\bdo\\s+|\\bthen\\s+)(${CLIS.join('|')})(?=\\s)`, 'g');
  for (const m of line.matchAll(pattern)) {
    const start = m.index! + m[1]!.length;
    // Not inside a comment: no unquoted `#` before it on the line.
    const before = line.slice(0, start);
    if (/(^|\s)#/.test(before.replace(/'[^']*'|"[^"]*"/g, ''))) continue;
    out.push({ cli: m[2] as DocCommand['cli'], text: line.slice(start, commandEnd(line, start)).trim() });
  }
  return out;
}

export function extractCommands(markdown: string, file: string): DocCommand[] {
  const out: DocCommand[] = [];
  const lines = markdown.split('\n');
  let fence: { lang: string; indent: string } | undefined;
  let loops: DocCommand['loops'] = [];
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const fenceMatch = /^(\s*)```\s*([A-Za-z]*)/.exec(raw);
    if (fenceMatch) {
      fence = fence ? undefined : { lang: fenceMatch[2]!.toLowerCase(), indent: fenceMatch[1]! };
      loops = [];
      continue;
    }
    if (fence) {
      if (!SHELL_LANGS.has(fence.lang)) continue;
      // A logical line: continuations joined.
      const first = i;
      let logical = raw;
      while (logical.endsWith('\\') && i + 1 < lines.length) logical = logical.slice(0, -1) + ' ' + lines[++i]!.trim();
      const loop = /^\s*for\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\s+([^;]+);\s*do\b/.exec(logical);
      if (loop) loops = [...loops, { name: loop[1]!, values: loop[2]!.trim().split(/\s+/) }];
      for (const c of commandsInLine(logical)) out.push({ ...c, file, line: first + 1, loops });
      if (/^\s*done\b/.test(logical)) loops = loops.slice(0, -1);
      continue;
    }
    // Inline code spans (they may wrap onto the next line of the paragraph).
    const paragraph = lines[i + 1] !== undefined && raw.split('`').length % 2 === 0 ? `${raw} ${lines[i + 1]}` : raw;
    for (const span of paragraph.matchAll(/`([^`]+)`/g)) {
      if (span.index! >= raw.length) break;
      const text = span[1]!.replace(/\s+/g, ' ').trim();
      const cli = CLIS.find((c) => text.startsWith(`${c} `));
      if (cli) out.push({ cli, text, file, line: i + 1, loops: [] });
    }
  }
  return out;
}

/**
 * The page's own variable assignments (`export A=…`, `A=…` at the start of a shell line, in page order), as shell
 * text: what a reader's shell holds by the time they reach a command. Those whose value runs a command other than
 * `git` are left out (the test gives their sample values).
 */
export function assignmentPrelude(markdown: string): string {
  const out: string[] = [];
  let inShell = false;
  for (const raw of markdown.split('\n')) {
    const fence = /^\s*```\s*([A-Za-z]*)/.exec(raw);
    if (fence) {
      inShell = !inShell && SHELL_LANGS.has(fence[1]!.toLowerCase());
      continue;
    }
    if (!inShell) continue;
    const line = raw.replace(/\s+#.*$/, '').trim();
    if (!/^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=/.test(line) || line.endsWith('\\')) continue;
    const substitutions = [...line.matchAll(/\$\(\s*([a-z]+)/g)].map((m) => m[1]);
    if (substitutions.some((cmd) => cmd !== 'git')) continue;
    out.push(line);
  }
  return out.join('\n');
}

/** One shell line as a reader types it: continuation lines joined, with the page line it starts on. */
export interface ShellLine {
  text: string;
  line: number;
}

/**
 * The lines of every sh/bash code block under a heading (up to the next heading of the same or a higher level),
 * in page order, continuations joined; blank lines and whole-line comments left out.
 */
export function shellLinesUnder(markdown: string, heading: string): ShellLine[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => /^#{1,6}\s/.test(l) && l.replace(/^#+\s+/, '').trim() === heading);
  if (start === -1) throw new Error(`no heading "${heading}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const out: ShellLine[] = [];
  let fence: string | undefined;
  for (let i = start + 1; i < lines.length; i++) {
    const raw = lines[i]!;
    const fenceMatch = /^\s*```\s*([A-Za-z]*)/.exec(raw);
    if (fenceMatch) {
      fence = fence === undefined ? fenceMatch[1]!.toLowerCase() : undefined;
      continue;
    }
    if (fence === undefined) {
      const h = /^(#{1,6})\s/.exec(raw);
      if (h && h[1]!.length <= level) break;
      continue;
    }
    if (!SHELL_LANGS.has(fence) || raw.trim() === '' || /^\s*#/.test(raw)) continue;
    const first = i;
    let logical = raw;
    while (logical.endsWith('\\') && i + 1 < lines.length) logical = logical.slice(0, -1) + ' ' + lines[++i]!.trim();
    out.push({ text: logical, line: first + 1 });
  }
  return out;
}
