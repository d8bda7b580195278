/**
 * The CLI's input and output: results on stdout (JSON with --json, text
 * otherwise), everything else on stderr, and secrets read from stdin or a
 * prompt that does not echo, never from the command line.
 */
import type { Readable, Writable } from 'node:stream';

/** Exit codes of the `keyward` command. */
export const Exit = { ok: 0, failure: 1, usage: 2, notFound: 3 } as const;

/** A mistake in how the command was called: exit 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A named thing that does not exist: exit 3. */
export class NotFound extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFound';
  }
}

export interface Io {
  stdin: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  stdout: Writable;
  stderr: Writable;
}

export const processIo = (): Io => ({ stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });

/** Aligned `label: value` lines. */
export function fields(rows: Array<[string, string | number | boolean | undefined | null]>): string {
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${(k + ':').padEnd(width + 1)} ${String(v)}`)
    .join('\n');
}

/** A plain text table with a header row. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

/**
 * A secret from stdin: the whole of a pipe or file (surrounding whitespace and
 * the final newline removed), or typed at a prompt on a terminal without echo.
 */
export async function readSecret(io: Io, prompt: string): Promise<string> {
  const secret = io.stdin.isTTY && io.stdin.setRawMode ? await promptHidden(io, prompt) : await readAll(io.stdin);
  const trimmed = secret.trim();
  if (trimmed === '') throw new UsageError('no API key given: pipe it on stdin (e.g. `keyward credentials create … < key.txt`) or type it at the prompt');
  return trimmed;
}

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > 64 * 1024) throw new UsageError('stdin holds more than 64 KiB; an API key is far shorter');
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function promptHidden(io: Io, prompt: string): Promise<string> {
  const stdin = io.stdin;
  io.stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let value = '';
    const done = (err?: Error) => {
      stdin.setRawMode!(false);
      stdin.pause();
      stdin.off('data', onData);
      io.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (data: Buffer | string) => {
      for (const ch of data.toString()) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return done();
        if (ch === '\u0003') return done(new UsageError('cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.setRawMode!(true);
    stdin.resume();
    stdin.on('data', onData);
  });
}
