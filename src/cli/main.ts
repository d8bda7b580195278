#!/usr/bin/env node
/**
 * `keyward`: the operator's command line. Same configuration (environment)
 * as the server; works straight on the store. Results go to stdout (text, or
 * JSON with --json), logs and errors to stderr. Exit codes: 0 ok, 1 runtime
 * failure, 2 usage error, 3 not found. Before a command opens the store, one
 * stderr line says which store and key it opens, and a deployment's cloud
 * settings without KEYWARD_STORE are a usage error (opened-store.ts).
 */
import 'reflect-metadata';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../settings/config.js';
import type { Vault } from '../boot/vault.js';
import { ApiError } from '../errors.js';
import { ADMIN_KEY_COMMANDS } from './admin-key-commands.js';
import { RENAME_COMMANDS } from './rename-commands.js';
import { COMMANDS as CORE_COMMANDS, RewrapIncomplete } from './commands.js';
import { OPTION_HELP, optionLine, type Command, type Context, type OptionName } from './command-kit.js';
import { TRUST_POLICY_COMMANDS } from './trust-policy-commands.js';
import { SIGNING_KEY_COMMANDS } from './signing-key-commands.js';
import { USAGE_COMMANDS } from './usage-commands.js';
import { POOL_COMMANDS } from './pool-commands.js';
import { ORG_COMMANDS } from './org-commands.js';
import { LOGIN_COMMANDS } from './login-commands.js';
import { Exit, NotFound, processIo, UsageError, type Io } from './io.js';
import { openedStore, refusedInJob, unnamedStore } from './opened-store.js';

/** Every command, in the order the help lists them (test/cli/help.test.ts walks this table). */
export const COMMANDS: Command[] = [...ORG_COMMANDS, ...CORE_COMMANDS, ...ADMIN_KEY_COMMANDS, ...TRUST_POLICY_COMMANDS, ...RENAME_COMMANDS, ...SIGNING_KEY_COMMANDS, ...USAGE_COMMANDS, ...POOL_COMMANDS, ...LOGIN_COMMANDS];
const VALUE_OPTIONS: OptionName[] = [
  'org', 'provider', 'credential', 'ttl', 'limit', 'starting-after', 'model', 'path', 'max-requests', 'rate-limit', 'budget-usd', 'tools', 'name', 'role', 'issuer', 'audience', 'subject', 'claim', 'status',
  'activate-in', 'pool', 'tokens-per-minute', 'max-concurrent', 'by', 'from', 'to', 'strategy', 'gateway',
];
/** Repeatable; a command that takes one value uses the last (`--credential` is a list only for an admin key). */
const MULTIPLE: OptionName[] = ['model', 'path', 'credential', 'claim', 'tools'];
/** Flags someone might try to pass a key with: refused with the reason, the value never echoed. */
const SECRET_FLAGS = /^--?(api[-_]?key|key|secret|token|password)(=|$)/i;

const GROUPS: Record<string, string> = {
  org: 'organisations',
  credentials: 'stored provider keys',
  tokens: 'proxy tokens',
  'trust-policies': 'workload identities that may exchange their OIDC token for a proxy token',
  'admin-keys': 'scoped admin keys (admin, minter, viewer)',
  keys: 'key-encryption key and OIDC signing key maintenance',
};

function topHelp(): string {
  const lines = COMMANDS.map((c) => `  ${[...c.words, ...c.args].join(' ').padEnd(28)} ${c.summary}`);
  return [
    'Usage: keyward <command> [options]',
    '',
    'Manage the Keyward vault directly on its store, with the same environment as the server',
    '(KEYWARD_DATA_DIR, KEYWARD_STORE, KEYWARD_KMS, KEYWARD_LOCAL_KEK, …). A command that opens the store',
    'first says on stderr which store and key it opened. With any of a deployment\'s settings set',
    '(KEYWARD_ISSUER_URL, KEYWARD_KMS_*, FIRESTORE_*, GOOGLE_CLOUD_PROJECT), KEYWARD_STORE must be set too.',
    '',
    'Commands:',
    ...lines,
    '',
    'Options everywhere:',
    `  ${OPTION_HELP.json}`,
    `  ${OPTION_HELP.help}`,
    '',
    'Exit codes: 0 ok, 1 failure, 2 usage error, 3 not found.',
    "Run 'keyward <command> --help' for a command's options.",
  ].join('\n');
}

function groupHelp(group: string): string {
  const cmds = COMMANDS.filter((c) => c.words[0] === group);
  return [
    `Usage: keyward ${group} <${cmds.map((c) => c.words[1]).join('|')}> [options]`,
    '',
    `${GROUPS[group] ?? group}:`,
    ...cmds.map((c) => `  ${[...c.words, ...c.args].join(' ').padEnd(28)} ${c.summary}`),
    '',
    'Options everywhere:',
    `  ${OPTION_HELP.json}`,
    `  ${OPTION_HELP.help}`,
    '',
    `Run 'keyward ${group} <command> --help' for a command's options.`,
  ].join('\n');
}

function commandHelp(c: Command): string {
  const synopsis = [
    'keyward', ...c.words, ...c.args,
    ...c.options.map((o) => {
      const flag = OPTION_HELP[o].split(/\s{2,}/)[0]!;
      const needed = ['org', 'provider', ...(c.words[0] === 'admin-keys' ? ['role'] : c.words[0] === 'trust-policies' ? ['credential', 'issuer', 'audience', 'subject'] : ['credential']),
        ...(c.words[1] === 'rename' ? ['name'] : [])];
      return needed.includes(o) ? flag : `[${flag}]`;
    }),
    c.creates ? '[--json | --quiet]' : '[--json]',
  ].join(' ');
  return [
    `Usage: ${synopsis}`,
    '',
    c.summary.charAt(0).toUpperCase() + c.summary.slice(1) + '.',
    ...(c.details ? ['', c.details] : []),
    '',
    'Options:',
    ...c.options.map((o) => `  ${optionLine(c, o)}`),
    `  ${OPTION_HELP.json}`,
    ...(c.creates ? [`  ${OPTION_HELP.quiet}`] : []),
    `  ${OPTION_HELP.help}`,
  ].join('\n');
}

interface Parsed {
  words: string[];
  positionals: string[];
  options: Context['options'];
  given: string[];
  json: boolean;
  quiet: boolean;
  help: boolean;
}

function parse(argv: string[]): Parsed {
  const secretFlag = argv.find((a) => SECRET_FLAGS.test(a));
  if (secretFlag) {
    throw new UsageError(`${secretFlag.split('=')[0]} is not accepted: a key or token is never taken from the command line (shell history and ps would keep it). Pipe it on stdin, or type it at the prompt.`);
  }
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {
    json: { type: 'boolean' },
    quiet: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  };
  for (const o of VALUE_OPTIONS) options[o] = { type: 'string', multiple: MULTIPLE.includes(o) };
  let result;
  try {
    result = parseArgs({ args: argv, options, allowPositionals: true, strict: true, tokens: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const m = /'(-[^' ]+)/.exec((err as Error).message);
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new UsageError(`unknown option ${m?.[1] ?? ''}`.trim());
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') throw new UsageError(`${m?.[1] ?? 'an option'} needs a value`);
    throw new UsageError((err as Error).message);
  }
  const { values, positionals, tokens } = result;
  const given = [...new Set(tokens.filter((t) => t.kind === 'option').map((t) => (t as { name: string }).name))];
  const words: string[] = [];
  const rest = [...positionals];
  if (rest[0] !== undefined) {
    words.push(rest.shift()!);
    if (rest[0] !== undefined && COMMANDS.some((c) => c.words.length === 2 && c.words[0] === words[0])) words.push(rest.shift()!);
  }
  const opts: Context['options'] = {};
  for (const o of VALUE_OPTIONS) {
    const v = values[o];
    if (v !== undefined) opts[o] = v as string | string[];
  }
  return { words, positionals: rest, options: opts, given, json: values.json === true, quiet: values.quiet === true, help: values.help === true };
}

function writeError(io: Io, json: boolean, code: string, message: string): void {
  io.stderr.write(json ? JSON.stringify({ error: { code, message } }) + '\n' : `keyward: ${message}\n`);
}

/** Runs one command line; resolves with the exit code. */
export async function run(argv: string[], io: Io = processIo(), env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let json = argv.includes('--json');
  let vault: Vault | undefined;
  try {
    const p = parse(argv);
    json = p.json;
    const [group, sub] = p.words;
    if (group === undefined || group === 'help') {
      if (p.help || group === 'help') {
        io.stdout.write(topHelp() + '\n');
        return Exit.ok;
      }
      io.stderr.write(topHelp() + '\n');
      return Exit.usage;
    }
    const inGroup = COMMANDS.filter((c) => c.words[0] === group);
    if (inGroup.length === 0) throw new UsageError(`unknown command ${JSON.stringify(group)}; run 'keyward --help'`);
    // `usage` alone, or `usage breakdown`: a group's one-word command is found only when no second word was given.
    const command = inGroup.find((c) => (sub === undefined ? c.words.length === 1 : c.words[1] === sub));
    if (!command) {
      if (sub === undefined && p.help) {
        io.stdout.write(groupHelp(group) + '\n');
        return Exit.ok;
      }
      throw new UsageError(sub === undefined
        ? `${group} needs a command: ${inGroup.map((c) => c.words[1]).join(', ')}`
        : `unknown command ${JSON.stringify(`${group} ${sub}`)}; run 'keyward ${group} --help'`);
    }
    if (p.help) {
      io.stdout.write(commandHelp(command) + '\n');
      return Exit.ok;
    }
    const inJob = refusedInJob(command.words, env);
    if (inJob !== undefined) throw new UsageError(inJob);
    const usage = `; run 'keyward ${command.words.join(' ')} --help'`;
    for (const name of p.given) {
      if (name === 'quiet' ? !command.creates : name !== 'json' && name !== 'help' && !command.options.includes(name as OptionName)) {
        throw new UsageError(`--${name} is not an option of ${command.words.join(' ')}${usage}`);
      }
    }
    if (p.quiet && p.json) throw new UsageError(`--quiet prints the id alone, --json the whole answer: give one${usage}`);
    if (p.positionals.length < command.args.length) throw new UsageError(`missing ${command.args.slice(p.positionals.length).join(' ')}${usage}`);
    // Extra arguments are not echoed: one may be a key pasted in the wrong place.
    if (p.positionals.length > command.args.length) throw new UsageError(`too many arguments (${p.positionals.length - command.args.length} extra, not shown)${usage}`);

    const ctx: Context = {
      io,
      json,
      quiet: p.quiet,
      args: p.positionals,
      options: p.options,
      vault: async () => {
        if (!vault) {
          const unnamed = unnamedStore(env);
          if (unnamed !== undefined) throw new UsageError(unnamed);
          const config = loadConfig(env);
          // One line on stderr (stdout stays the result alone, pure JSON with --json): where this command acts.
          io.stderr.write(`keyward: ${openedStore(config)}\n`);
          // Loaded only when a command needs the store: --help and usage errors stay fast.
          const [{ openVault }, { createLogger }] = await Promise.all([import('../boot/vault.js'), import('../log.js')]);
          vault = await openVault(config, createLogger(config.logLevel, 2));
        }
        return vault;
      },
    };
    await command.run(ctx);
    return Exit.ok;
  } catch (err) {
    if (err instanceof UsageError) {
      writeError(io, json, 'usage', err.message);
      return Exit.usage;
    }
    if (err instanceof ConfigError) {
      writeError(io, json, 'invalid_configuration', `invalid configuration: ${err.message}`);
      return Exit.usage;
    }
    if (err instanceof NotFound) {
      writeError(io, json, 'not_found', err.message);
      return Exit.notFound;
    }
    if (err instanceof ApiError) {
      writeError(io, json, err.code, err.message.replace(/`/g, ''));
      if (err.status === 404) return Exit.notFound;
      return err.status === 400 ? Exit.usage : Exit.failure;
    }
    if (err instanceof RewrapIncomplete) {
      writeError(io, json, 'rewrap_incomplete', err.message);
      return Exit.failure;
    }
    writeError(io, json, 'failure', err instanceof Error ? err.message : String(err));
    return Exit.failure;
  } finally {
    if (vault) {
      try {
        await vault.close();
      } catch {
        /* closing after a failure: the first error is the one reported */
      }
    }
  }
}

// Run when executed (`node dist/src/cli/main.js`; the bin link runs bin.js, which calls runFromProcess), not when imported by a test.
function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

/** Resolves once everything written to `stream` so far has been handed to the OS (a pipe is written asynchronously). */
const drained = (stream: NodeJS.WriteStream) => new Promise<void>((resolve) => stream.write('', () => resolve()));

/** Runs the command line of this process (argv, stdio) and exits with its code: the executable's whole job. */
export function runFromProcess(): void {
  void run(process.argv.slice(2)).then(async (code) => {
    // The work is done and the store closed; exit rather than wait for the event loop to empty: a store client
    // can keep a connection open after it closed (the Firestore emulator never ends a listen stream the client
    // ended), which left the command printing its answer and never returning.
    await Promise.all([drained(process.stdout), drained(process.stderr)]);
    process.exit(code);
  });
}

if (invokedDirectly()) runFromProcess();
