/**
 * Every cloud CLI command in README.md and docs/ run through the real CLI, without credentials: each must get past
 * the CLI's own argument parsing and fail only for lack of credentials or a project, never for a usage error.
 *
 * gcloud: the installed one (KEYWARD_GCLOUD, default `gcloud` on PATH), its code loaded once and forked per command
 * (test/support/gcloud-forks.ts; a sample is run by gcloud itself too and must answer the same), with an empty CLOUDSDK_CONFIG per command,
 * prompts disabled, HOME a temp folder, and the variables the page itself sets (plus samples for those it reads from
 * a command's output). aws: the same way when it is installed. az: only when installed (it is not on this project's
 * machines). A command that cannot be run so is listed in NOT_RUN with the reason.
 *
 * Each distinct script runs once: a command that two pages give with the same variables is one run, and a command in
 * a loop runs with the loop's first value only, once the test has checked that every value is a single plain word
 * (a letter or digit, then letters, digits, `_`, `-`, `.`: never a flag): the shell then passes each value as the same one argument, and the CLI parses it
 * the same way.
 *
 * gcloud missing: with CI unset (a developer's machine) the test fails, "gcloud not installed: N commands not checked";
 * in CI it passes saying the same in its log, since CI cannot install it (gcloud is in neither the npm registry nor
 * Debian's packages, the only registries CI reaches), and passing silently as if it had checked is never an option.
 */
import test from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { assignmentPrelude, extractCommands, type DocCommand } from '../support/doc-commands.js';
import { ROOT } from '../support/app.js';
import { docsPages } from '../support/doc-pages.js';
import { startGcloudForks, type GcloudForks } from '../support/gcloud-forks.js';

const PAGES = ['README.md', ...docsPages()];
const GCLOUD = process.env.KEYWARD_GCLOUD ?? 'gcloud';

/** Variables a page fills from a command's output, with values of the shape that output has. */
const SAMPLES: Record<string, string> = {
  PROJECT_NUMBER: '123456789012',
  BUILD_SA: 'projects/my-project/serviceAccounts/123456789012-compute@developer.gserviceaccount.com',
  URL: 'https://keyward-abc123-ew.a.run.app',
};

/** Commands run to completion locally, with no cloud call: success is their right answer. */
const LOCAL_OK: Array<[RegExp, string]> = [
  [/^gcloud config set project /, 'writes the local configuration only'],
  [/^gcloud auth configure-docker /, "writes Docker's credential-helper configuration (in the test's HOME) only"],
  [/^gcloud topic /, 'help text'],
  [/^gcloud meta list-files-for-upload /, 'lists the local files an upload would take'],
];

/** Commands the test does not run, and why. */
const NOT_RUN: Array<[RegExp, string]> = [
  [/^gcloud auth login$/, 'interactive: opens a browser to sign in'],
  [/^gcloud emulators firestore start /, 'starts a local emulator server that runs until stopped (and needs the cloud-firestore-emulator component)'],
];

const NO_CREDENTIALS: Record<DocCommand['cli'], RegExp> = {
  gcloud: /You do not currently have an active account selected|The required property \[project\] is not currently set|Failed to find attribute \[project\]|The \[project\] resource is not properly specified|Your current active account .* does not have any valid credentials|There was a problem refreshing your current auth tokens/,
  aws: /Unable to locate credentials|You must specify a region/,
  az: /Please run 'az login'|az login/,
};

interface Outcome {
  command: string;
  where: string;
  code: number | null;
  output: string;
}

function installed(cli: string): boolean {
  return spawnSync(cli, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** The script bash runs for a command: the page's variables, then the command, as a reader's shell would run it. */
function scriptOf(c: DocCommand, prelude: string, loopValues: Record<string, string>): string {
  const assignments = Object.entries({ ...SAMPLES, ...loopValues }).map(([k, v]) => `${k}='${v}'`).join('\n');
  return `${assignments}\n${prelude}\nset -u\n${c.text}\n`;
}

/** gcloud as KEYWARD_GCLOUD names it, unless the fork server's `gcloud` (first on PATH) runs it. */
const commandText = (script: string, forks: GcloudForks | undefined) => (GCLOUD !== 'gcloud' && !forks ? script.replace(/^gcloud/m, GCLOUD) : script);

/** A loop value the shell passes as one word and a CLI parses as any other such word would be. */
const PLAIN_WORD = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** The command under bash with the page's variables, no credentials anywhere. */
function run(c: DocCommand, script: string, forks?: GcloudForks): Promise<Outcome> {
  const home = mkdtempSync(path.join(tmpdir(), 'keyward-doc-cli-'));
  const text = c.text;
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', commandText(script, forks)], {
      cwd: ROOT,
      env: {
        PATH: forks ? `${forks.bin}:${process.env.PATH ?? ''}` : process.env.PATH ?? '',
        ...forks?.env,
        HOME: home,
        CLOUDSDK_CONFIG: path.join(home, 'gcloud'),
        CLOUDSDK_CORE_DISABLE_PROMPTS: '1',
        // Step 1 of the page sets the project (gcloud config set project): the reader's later commands have one.
        CLOUDSDK_CORE_PROJECT: 'my-project',
        AWS_CONFIG_FILE: path.join(home, 'aws-config'),
        AWS_SHARED_CREDENTIALS_FILE: path.join(home, 'aws-credentials'),
        AWS_EC2_METADATA_DISABLED: 'true',
        AZURE_CONFIG_DIR: path.join(home, 'azure'),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.stdin.end('sample-secret-data');
    child.once('exit', (code) => {
      rmSync(home, { recursive: true, force: true });
      resolve({ command: text, where: `${c.file}:${c.line}`, code, output: output.replaceAll(home, '$HOME') });
    });
  });
}

/** What a result means: undefined when it is what the page's reader without credentials should see. */
export function verdict(c: DocCommand, o: Outcome): string | undefined {
  if (/unbound variable/.test(o.output)) return `uses a variable the page never sets: ${o.output.trim()}`;
  if (o.code === 0) return LOCAL_OK.some(([re]) => re.test(c.text)) ? undefined : 'succeeded without credentials (add it to LOCAL_OK with a reason if that is right)';
  if (NO_CREDENTIALS[c.cli].test(o.output)) return undefined;
  return `failed, and not for lack of credentials or project (exit ${o.code}):\n${o.output.trim().split('\n').slice(0, 6).join('\n')}`;
}

/** Each command with every value its loops give, and what the page's reader has set by then. */
function expand(): Array<{ c: DocCommand; prelude: string; loopValues: Record<string, string> }> {
  const out: Array<{ c: DocCommand; prelude: string; loopValues: Record<string, string> }> = [];
  for (const page of PAGES) {
    const md = readFileSync(path.join(ROOT, page), 'utf8');
    const prelude = assignmentPrelude(md);
    for (const c of extractCommands(md, page)) {
      let combos: Array<Record<string, string>> = [{}];
      for (const loop of c.loops) combos = combos.flatMap((combo) => loop.values.map((v) => ({ ...combo, [loop.name]: v })));
      for (const loopValues of combos) out.push({ c, prelude, loopValues });
    }
  }
  return out;
}

async function pool<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  }));
  return results;
}

/** gcloud missing: a failure on a developer's machine, a logged pass in CI (which cannot install it). */
export function missingCli(cli: string, count: number, ci: string | undefined): { fail: boolean; message: string } {
  return { fail: !ci, message: `${cli} not installed: ${count} commands not checked` };
}

const all = expand();

test('the pages name the deploy commands this test must see (the extraction works)', (t) => {
  const texts = all.map((x) => x.c.text);
  t.true(all.filter((x) => x.c.cli === 'gcloud').length >= 50, `${all.length} commands`);
  t.true(texts.some((x) => x.startsWith('gcloud run deploy keyward ') && x.includes('--startup-probe=') && x.includes('--liveness-probe=') && x.includes('--ingress=')
    && x.includes('--no-invoker-iam-check') && x.includes('--env-vars-file=deploy/service.env.yaml')));
  t.true(texts.some((x) => x.startsWith('gcloud run jobs create keyward-admin ') && x.includes('--env-vars-file=deploy/service.env.yaml')), 'the admin job');
  t.true(texts.some((x) => x.startsWith('gcloud beta run services update keyward ') && x.includes('--no-default-url')));
  t.true(texts.some((x) => x.startsWith('gcloud secrets create keyward-admin-token --data-file=-')), 'the command after a pipe');
  t.is(all.filter((x) => x.c.text.startsWith('gcloud firestore indexes composite create --collection-group="$group"')).length, 7 + 2 * 2 + 5, 'one run per loop value (three loops; the second runs two commands per value)');
  t.is(all.filter((x) => x.c.text.startsWith('gcloud firestore fields ttls update expire_at --collection-group="$group" --enable-ttl')).length, 2, 'a TTL policy on audit and on audit_counts');
  t.false(texts.some((x) => /:latest\b/.test(x)), 'secrets are pinned to a version, never latest');
  t.false(texts.some((x) => x.includes('services replace')), 'the service is never replaced from a YAML');
  t.false(all.some((x) => /\bdate\s+(-u\s+)?-d\b/.test(readFileSync(path.join(ROOT, x.c.file), 'utf8'))), 'no GNU-only date -d');
});

test('the classifier refuses a usage error, an unset variable and an unexpected success', (t) => {
  const c = (text: string): DocCommand => ({ cli: 'gcloud', text, file: 'x.md', line: 1, loops: [] });
  t.regex(verdict(c('gcloud run deploy x --bogus'), { command: '', where: '', code: 2, output: 'ERROR: (gcloud.run.deploy) unrecognized arguments: --bogus' }) ?? '', /not for lack of credentials/);
  t.regex(verdict(c('gcloud x'), { command: '', where: '', code: 1, output: 'bash: line 3: REGION: unbound variable' }) ?? '', /never sets/);
  t.regex(verdict(c('gcloud secrets list'), { command: '', where: '', code: 0, output: '' }) ?? '', /succeeded without credentials/);
  t.is(verdict(c('gcloud secrets list'), { command: '', where: '', code: 1, output: 'ERROR: (gcloud.secrets.list) You do not currently have an active account selected.' }), undefined);
  t.deepEqual(missingCli('gcloud', 7, undefined), { fail: true, message: 'gcloud not installed: 7 commands not checked' });
  t.deepEqual(missingCli('gcloud', 7, 'true'), { fail: false, message: 'gcloud not installed: 7 commands not checked' });
});

for (const cli of ['gcloud', 'aws', 'az'] as const) {
  test(`every ${cli} command in README.md and docs/ parses, and fails only for lack of credentials or project`, async (t) => {
    t.timeout(600_000);
    const mine = all.filter((x) => x.c.cli === cli);
    const skipped = mine.filter((x) => NOT_RUN.some(([re]) => re.test(x.c.text)));
    for (const s of skipped) t.log(`not run: ${s.c.file}:${s.c.line} ${s.c.text} (${NOT_RUN.find(([re]) => re.test(s.c.text))![1]})`);
    const runnable = mine.filter((x) => !skipped.includes(x));
    if (runnable.length === 0) {
      t.pass(`no ${cli} command in the pages`);
      return;
    }
    if (!installed(cli === 'gcloud' ? GCLOUD : cli)) {
      const { fail, message } = cli === 'az' ? { fail: false, message: `az not installed: ${runnable.length} commands not checked` } : missingCli(cli, runnable.length, process.env.CI);
      t.log(message);
      if (fail) t.fail(message);
      else t.pass(message);
      return;
    }
    // One run per distinct script, a loop's first value standing for the others (checked to be plain words).
    const notPlain = runnable.filter((x) => Object.values(x.loopValues).some((v) => !PLAIN_WORD.test(v)));
    t.deepEqual(notPlain.map((x) => `${x.c.file}:${x.c.line} ${JSON.stringify(x.loopValues)}`), [], 'loop values are plain words');
    const firstValues = (x: (typeof runnable)[number]) => Object.fromEntries(x.c.loops.map((l) => [l.name, l.values[0]!]));
    const scripts = runnable.map((x) => scriptOf(x.c, x.prelude, firstValues(x)));
    const distinct = [...new Set(scripts)];
    const byScript = new Map(distinct.map((script) => [script, runnable[scripts.indexOf(script)]!.c]));
    // gcloud: through the fork server (test/support/gcloud-forks.ts), checked against gcloud itself on a sample
    // (the first three scripts and a usage error): the same exit code and output.
    const forks = cli === 'gcloud' ? await startGcloudForks(t, GCLOUD) : undefined;
    if (forks) {
      const bogus = { c: { ...byScript.get(distinct[0]!)!, text: 'gcloud run deploy keyward --bogus-flag' }, script: 'set -u\ngcloud run deploy keyward --bogus-flag\n' };
      const sample = [...distinct.slice(0, 3).map((script) => ({ c: byScript.get(script)!, script })), bogus];
      for (const { c, script } of sample) {
        const [direct, forked] = await Promise.all([run(c, script), run(c, script, forks)]);
        t.deepEqual({ code: forked.code, output: forked.output }, { code: direct.code, output: direct.output }, `the fork server answers as gcloud: ${c.text}`);
      }
    }
    const ran = new Map((await pool(distinct, 2, (script) => run(byScript.get(script)!, script, forks))).map((o, i) => [distinct[i]!, o]));
    const outcomes = scripts.map((script, i) => ({ ...ran.get(script)!, where: `${runnable[i]!.c.file}:${runnable[i]!.c.line}` }));
    const bad = outcomes.map((o, i) => [o, verdict(runnable[i]!.c, o)] as const).filter(([, v]) => v !== undefined);
    for (const [o, v] of bad) t.log(`${o.where}: ${o.command}\n  ${v}`);
    t.is(bad.length, 0, `${bad.length} of ${outcomes.length} ${cli} commands`);
    t.log(`${outcomes.length} ${cli} commands checked in ${distinct.length} runs`);
  });
}
