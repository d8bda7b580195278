/**
 * The README's quick start, run as a reader runs it: every line of its shell blocks typed in turn into one bash, on
 * the installed and built checkout, against an empty data folder; a line sent to the background (`… &`) is a
 * server, and the next line waits for its "listening" line as a reader would. It must reach a streamed answer from
 * the stand-in provider with no id copied by hand, the offline way shown (a stand-in and KEYWARD_UPSTREAM_OPENAI),
 * no operator token needed, the start command given once.
 *
 * What the test changes, and only that: the README's ports (8080 for the gateway, 9999 for the stand-in) become
 * free ones, given to the servers through PORT and STAND_IN_PORT, so the test can run beside others; the data
 * folder is a temporary one (KEYWARD_DATA_DIR), the host 127.0.0.1. Lines not run are listed in NOT_RUN with why.
 * `jq` must be installed (.ci/run installs it): the README uses it to pick ids out of the CLI's JSON.
 */
import test from 'ava';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT } from '../support/app.js';
import { shellLinesUnder, type ShellLine } from '../support/doc-commands.js';
import { WORDS } from '../support/fake-provider.js';

const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const LINES = shellLinesUnder(README, 'Quick start');

const NOT_RUN: Array<[RegExp, string]> = [
  [/^npm install\b/, 'the test runs on the checkout `npm install` made and built'],
  [/^npm run demo\b/, 'test/demo.test.ts runs the demo (it rebuilds dist/ first, which would race the other tests)'],
];

const LINE_TIMEOUT_MS = 60_000;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** One bash, fed a line at a time; everything it and its children write, in order. */
class Shell {
  output = '';
  private readonly waiters = new Set<() => void>();
  readonly exited: Promise<void>;
  private typed = 0;

  constructor(readonly proc: ChildProcess) {
    const take = (d: Buffer) => {
      this.output += d.toString();
      for (const w of this.waiters) w();
    };
    proc.stdout!.on('data', take);
    proc.stderr!.on('data', take);
    this.exited = new Promise((resolve) => proc.once('exit', () => resolve()));
  }

  /** Waits until `done` holds for the output, or fails after LINE_TIMEOUT_MS. */
  private until(done: () => boolean, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!done()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`${what}: nothing after ${LINE_TIMEOUT_MS / 1000} s`));
      }, LINE_TIMEOUT_MS);
      this.waiters.add(check);
      check();
    });
  }

  /**
   * Types one line and waits as a reader would: for its exit status, or for a background server's "listening".
   * The line runs in a group with stdin from /dev/null, so nothing it starts reads the lines typed after it.
   */
  async type(text: string): Promise<{ status: number; output: string }> {
    const marker = `__quick_start_line_${++this.typed}__`;
    const from = this.output.length;
    const background = /(^|[^&])&\s*(#.*)?$/.test(text);
    const listeningBefore = this.output.match(/listening/g)?.length ?? 0;
    this.proc.stdin!.write(`{ ${text}\n} </dev/null; printf '\\n${marker}%s\\n' "$?"\n`);
    const ended = new RegExp(`${marker}(\\d+)`);
    await this.until(() => ended.test(this.output.slice(from)), `"${text}" did not finish`);
    if (background) await this.until(() => (this.output.match(/listening/g)?.length ?? 0) > listeningBefore, `"${text}" never said it was listening`);
    const status = Number(ended.exec(this.output.slice(from))![1]);
    return { status, output: this.output.slice(from).replace(new RegExp(`\\n?${marker}\\d+\\n`), '') };
  }
}

test('the quick start is written to be run as it stands: offline, no operator token, one start, no id copied by hand', (t) => {
  const text = LINES.map((l) => l.text).join('\n');
  t.true(LINES.length >= 6, `only ${LINES.length} lines in the quick start's shell blocks`);
  t.regex(text, /^npm run stand-in &/m, 'starts the stand-in provider');
  t.regex(text, /KEYWARD_UPSTREAM_OPENAI=http:\/\/127\.0\.0\.1:9999 npm start &/, 'points the gateway at the stand-in');
  t.is(text.match(/\bnpm start\b/g)?.length, 1, 'the start command, once');
  t.notRegex(text, /KEYWARD_ADMIN_TOKEN/, 'no operator token in the quick start');
  t.notRegex(text, /\b(?:org|cred|tok|pool|akey)_[0-9A-Za-z…]|\b(?:ptok|otok)_[0-9A-Za-z…]/, 'no id or token typed by hand');
  for (const curl of LINES.filter((l) => /(^|\s)curl\s/.test(l.text))) t.regex(curl.text, /curl -s/, `README.md:${curl.line}: curl without -s`);
});

test('the quick start, typed line by line, streams the stand-in\'s answer through the gateway', async (t) => {
  t.timeout(4 * LINE_TIMEOUT_MS);
  if (spawnSync('jq', ['--version'], { stdio: 'ignore' }).status !== 0) {
    t.fail('jq is not installed: the README\'s quick start uses it (apt-get install jq; .ci/run installs it)');
    return;
  }
  const [gatewayPort, standInPort] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'keyward-quick-start-'));
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('KEYWARD_') && k !== 'PORT' && k !== 'HOST'));
  const proc = spawn('bash', ['--noprofile', '--norc'], {
    cwd: ROOT,
    env: { ...env, KEYWARD_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(gatewayPort), STAND_IN_PORT: String(standInPort) },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true, // its own process group: the servers it starts in the background stop with it
  });
  const shell = new Shell(proc);
  t.teardown(async () => {
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      try {
        process.kill(-proc.pid!, signal);
      } catch {
        break; // the group is gone
      }
      await Promise.race([shell.exited, new Promise((r) => setTimeout(r, 5_000))]);
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  const localise = (l: ShellLine) => l.text.replaceAll('8080', String(gatewayPort)).replaceAll('9999', String(standInPort));
  let answer: string | undefined;
  for (const line of LINES) {
    const skipped = NOT_RUN.find(([pattern]) => pattern.test(line.text));
    if (skipped) {
      t.log(`not run: README.md:${line.line} ${line.text} (${skipped[1]})`);
      continue;
    }
    const { status, output } = await shell.type(localise(line));
    t.is(status, 0, `README.md:${line.line} exited ${status}: ${line.text}\n${shell.output}`);
    if (status !== 0) return;
    if (/\/v1\/proxy\//.test(line.text)) answer = output;
  }

  t.truthy(answer, 'the quick start calls the proxy');
  const events = [...(answer ?? '').matchAll(/^data: (.*)$/gm)].map((m) => m[1]!);
  t.is(events.at(-1), '[DONE]', answer);
  const text = events.filter((e) => e !== '[DONE]').map((e) => (JSON.parse(e) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '').join('');
  t.is(text, WORDS.join(''), 'the stand-in\'s words, streamed through the gateway');

  // The stand-in logs the last four characters of the key it received: the stored one, as the README says.
  const stored = /echo (\S+) \| npx keyward credentials create/.exec(LINES.map((l) => l.text).join('\n'))?.[1];
  t.truthy(stored, 'the quick start stores a key from stdin');
  const hint = `key …${stored!.slice(-4)}`;
  t.true(shell.output.includes(`(${hint})`), `the stand-in received the stored key\n${shell.output}`);
  t.true(README.includes(hint), `the README names what the stand-in logs (${hint})`);
});
