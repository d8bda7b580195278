/**
 * The Dockerfile as the replay carries it out (scripts/docker/replay.ts): its stages in order, each a base (an image
 * or an earlier stage) and its steps, parsed with dockerfile-ast (the parser behind VS Code's Dockerfile support).
 * An instruction or flag the replay cannot carry out as Docker would is refused by name, never skipped, so the
 * replay can only pass for a Dockerfile it really replayed.
 */
import { DockerfileParser, type Instruction } from 'dockerfile-ast';

export type Step =
  | { kind: 'workdir'; path: string; line: number }
  | { kind: 'copy'; from: string | undefined; chown: string | undefined; sources: string[]; dest: string; line: number }
  | { kind: 'run'; shell: string | undefined; argv: string[] | undefined; line: number }
  | { kind: 'env'; vars: Array<[string, string]>; line: number }
  | { kind: 'user'; user: string; line: number };

export interface Stage {
  /** `AS name`, lower-cased as Docker treats it; undefined for an unnamed stage. */
  name: string | undefined;
  index: number;
  /** The image it starts from, or an earlier stage's name. */
  base: string;
  steps: Step[];
  expose: number[];
  /** CMD in exec form (the only form accepted: a shell form would make /bin/sh PID 1, and SIGTERM would not reach Node). */
  cmd: string[] | undefined;
}

export class DockerfileError extends Error {
  constructor(line: number, message: string) {
    super(`Dockerfile:${line + 1}: ${message}`);
    this.name = 'DockerfileError';
  }
}

const line = (ins: Instruction): number => ins.getRange().start.line;

/** The exec (JSON array) form of an instruction's arguments, or undefined for the shell form. */
function execForm(ins: Instruction): string[] | undefined {
  const content = ins.getArgumentsContent() ?? '';
  if (!content.trimStart().startsWith('[')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return undefined; // Docker runs an array that is not valid JSON in the shell form.
  }
  if (!Array.isArray(parsed) || !parsed.every((s) => typeof s === 'string')) throw new DockerfileError(line(ins), `${ins.getKeyword()}: a JSON array of strings`);
  return parsed as string[];
}

function flagsOf(ins: Instruction, allowed: readonly string[]): Map<string, string | null> {
  const flags = new Map<string, string | null>();
  for (const f of (ins as unknown as { getFlags(): Array<{ getName(): string; getValue(): string | null }> }).getFlags()) {
    if (!allowed.includes(f.getName())) throw new DockerfileError(line(ins), `${ins.getKeyword()} --${f.getName()} is not replayed (add it to scripts/docker/)`);
    flags.set(f.getName(), f.getValue());
  }
  return flags;
}

function noVariables(ins: Instruction, text: string): string {
  if (text.includes('$')) throw new DockerfileError(line(ins), `${ins.getKeyword()}: variables are not replayed: ${text}`);
  return text;
}

export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  let current: Stage | undefined;
  for (const ins of DockerfileParser.parse(text).getInstructions()) {
    const keyword = ins.getKeyword();
    const at = line(ins);
    if (keyword === 'FROM') {
      flagsOf(ins, []);
      const args = ins.getArguments().map((a) => a.getValue());
      if (!(args.length === 1 || (args.length === 3 && args[1]!.toUpperCase() === 'AS'))) throw new DockerfileError(at, 'FROM image [AS name]');
      current = { name: args[2]?.toLowerCase(), index: stages.length, base: noVariables(ins, args[0]!), steps: [], expose: [], cmd: undefined };
      stages.push(current);
      continue;
    }
    if (!current) throw new DockerfileError(at, `${keyword} before FROM`);
    switch (keyword) {
      case 'WORKDIR':
        current.steps.push({ kind: 'workdir', path: noVariables(ins, ins.getArgumentsContent() ?? ''), line: at });
        break;
      case 'COPY': {
        const flags = flagsOf(ins, ['from', 'chown']);
        const words = execForm(ins) ?? ins.getArguments().map((a) => a.getValue());
        if (words.length < 2) throw new DockerfileError(at, 'COPY needs a source and a destination');
        words.forEach((w) => noVariables(ins, w));
        const from = flags.get('from') ?? undefined;
        current.steps.push({ kind: 'copy', from: from?.toLowerCase(), chown: flags.get('chown') ?? undefined, sources: words.slice(0, -1), dest: words.at(-1)!, line: at });
        break;
      }
      case 'RUN': {
        flagsOf(ins, []);
        const argv = execForm(ins);
        current.steps.push({ kind: 'run', argv, shell: argv ? undefined : (ins.getArgumentsContent() ?? ''), line: at });
        break;
      }
      case 'ENV': {
        const props = (ins as unknown as { getProperties(): Array<{ getName(): string; getValue(): string | null }> }).getProperties();
        current.steps.push({ kind: 'env', vars: props.map((p) => [p.getName(), noVariables(ins, p.getValue() ?? '')]), line: at });
        break;
      }
      case 'USER':
        current.steps.push({ kind: 'user', user: noVariables(ins, ins.getArgumentsContent() ?? ''), line: at });
        break;
      case 'EXPOSE':
        for (const a of ins.getArguments()) {
          const port = /^([0-9]+)(\/tcp)?$/.exec(a.getValue());
          if (!port) throw new DockerfileError(at, `EXPOSE ${a.getValue()}: a TCP port`);
          current.expose.push(Number(port[1]));
        }
        break;
      case 'CMD': {
        const argv = execForm(ins);
        if (!argv) throw new DockerfileError(at, 'CMD in shell form: /bin/sh would be PID 1 and SIGTERM would not reach the server; use the exec form');
        current.cmd = argv;
        break;
      }
      case 'LABEL':
        break;
      default:
        throw new DockerfileError(at, `${keyword} is not replayed (add it to scripts/docker/)`);
    }
  }
  if (stages.length === 0) throw new DockerfileError(0, 'no FROM');
  return stages;
}

/** The stage a `--from` or FROM names: by name, or by index for an earlier unnamed one. */
export function stageNamed(stages: readonly Stage[], ref: string, before: number): Stage | undefined {
  return stages.slice(0, before).find((s) => s.name === ref.toLowerCase() || String(s.index) === ref);
}
