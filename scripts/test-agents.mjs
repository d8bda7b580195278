#!/usr/bin/env node
/**
 * `npm run test:agents`: installs the pinned coding agents (test/agents/agents.json: Claude Code and Codex CLI,
 * each with its native binary from an optional dependency package, the OpenAI Agents SDK and Claude Agent SDK, and
 * MCP Inspector) from npm into a scratch folder, never into the project's dependencies, then runs test/agents/ with
 * ava (one non-interactive turn of each agent through a built Keyward against fakes that accept only the stored key;
 * the Inspector's CLI on an MCP route with a token from Keyward's OAuth flow).
 *
 * The folder is KEYWARD_AGENTS_DIR, else `<tmp>/keyward-agents-<pins>`; an install that already holds the pinned
 * versions (and whose binaries answer --version) is reused.
 *
 * When the agents cannot be installed, it says so on one line that starts with `test:agents: NOT RUN`, and:
 * - exits 0 when the cause is outside the project: the npm registry cannot be reached (a network error), or
 *   this platform has no native package of an agent. Nothing about Keyward was learnt, and a registry outage
 *   must not block unrelated work; `npm test` still ran. KEYWARD_AGENTS_REQUIRED=1 makes these exit 1 too (for a
 *   pipeline that must prove the agents work).
 * - exits 1 when the cause is the project's: a pinned version the registry does not have (the pin is wrong),
 *   an install that fails otherwise, or a binary that does not run once installed.
 * A test that fails exits 1, as ava does.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pins = JSON.parse(readFileSync(path.join(root, 'test/agents/agents.json'), 'utf8'));
const agents = [pins.claude, pins.codex, pins.openaiAgents, pins.claudeAgentSdk, pins.inspector];
const required = process.env.KEYWARD_AGENTS_REQUIRED === '1';
const id = createHash('sha256').update(agents.map((a) => `${a.package}@${a.version}`).join(' ')).digest('hex').slice(0, 12);
const dir = path.resolve(process.env.KEYWARD_AGENTS_DIR ?? path.join(tmpdir(), `keyward-agents-${id}`));

/** The platforms the agents publish a native package for (their optionalDependencies). */
const SUPPORTED = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64'];

function notRun(reason, ours) {
  const exit = ours || required ? 1 : 0;
  console.error(`test:agents: NOT RUN: ${reason}${exit === 0 ? ' (exit 0: not the project\'s fault; KEYWARD_AGENTS_REQUIRED=1 makes it fail)' : ''}`);
  process.exit(exit);
}

const binOf = (agent) => path.join(dir, 'node_modules', '.bin', process.platform === 'win32' ? `${agent.bin}.cmd` : agent.bin);

/** The installed version of `agent`'s package, or undefined. */
function installedVersion(agent) {
  const file = path.join(dir, 'node_modules', agent.package, 'package.json');
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).version : undefined;
}

/** `bin --version` printed the pinned version (a library, with no bin: installed is enough). */
function answers(agent) {
  if (!agent.bin) return true;
  const r = spawnSync(binOf(agent), ['--version'], { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH, HOME: dir } });
  return r.status === 0 && r.stdout.includes(agent.version);
}

const platform = `${process.platform}-${process.arch}`;
if (!SUPPORTED.includes(platform)) notRun(`no native package of Claude Code, Codex CLI or the Claude Agent SDK for ${platform}`, false);

const ready = () => agents.every((a) => installedVersion(a) === a.version && answers(a));
if (!ready()) {
  mkdirSync(dir, { recursive: true });
  // Its own package.json: npm must not walk up to a project above the scratch folder.
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'keyward-agents-scratch', private: true }, null, 2));
  const specs = agents.map((a) => `${a.package}@${a.version}`);
  console.log(`test:agents: installing ${specs.join(' ')} into ${dir}`);
  const r = spawnSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--no-package-lock', '--include=optional', ...specs], {
    cwd: dir, encoding: 'utf8', env: { ...process.env, npm_config_loglevel: 'error' },
  });
  if (r.status !== 0) {
    const out = `${r.stdout}\n${r.stderr}`;
    const code = /npm (?:error|ERR!) code (\S+)/.exec(out)?.[1] ?? (r.error ? r.error.code : undefined);
    const network = /^(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|E50\d|ERR_SOCKET_TIMEOUT|FETCH_ERROR)$/.test(code ?? '')
      || /network|getaddrinfo|socket hang up|request to .* failed/i.test(out);
    if (network) notRun(`the npm registry could not be reached (${code ?? 'network error'})`, false);
    if (code === 'ETARGET' || code === 'E404') notRun(`a pinned version is not in the registry (${code}): fix test/agents/agents.json`, true);
    console.error(out.trim().split('\n').slice(-20).join('\n'));
    notRun(`npm install failed (${code ?? `exit ${r.status}`})`, true);
  }
  for (const a of agents) {
    // A native package npm skipped (another libc, say) leaves the wrapper without its binary.
    if (installedVersion(a) === a.version && !answers(a)) {
      const installer = path.join(dir, 'node_modules', a.package, 'install.cjs');
      if (existsSync(installer)) spawnSync(process.execPath, [installer], { cwd: path.dirname(installer), stdio: 'inherit' });
    }
    if (installedVersion(a) !== a.version) notRun(`${a.package}@${a.version} is not in ${dir} after npm install`, true);
    if (!answers(a)) notRun(`${a.package}@${a.version} installed but \`${a.bin} --version\` does not answer it`, true);
  }
}
console.log(`test:agents: ${agents.map((a) => `${a.package}@${a.version}`).join(', ')} in ${dir}`);

const ava = spawn(process.execPath, [path.join(root, 'node_modules/ava/entrypoints/cli.js')], {
  cwd: root, stdio: 'inherit', env: { ...process.env, KEYWARD_AGENTS_DIR: dir },
});
ava.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
