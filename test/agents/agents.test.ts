/**
 * Real coding agents through Keyward (issue 33), run by `npm run test:agents`
 * (scripts/test-agents.mjs installs the pinned versions first): one
 * non-interactive turn of Claude Code (`claude -p`), of Codex CLI (`codex exec`,
 * with its built-in provider over the Responses API's WebSocket, and with a
 * `config.toml` provider over HTTPS), of the OpenAI Agents SDK and of the Claude
 * Agent SDK, set up exactly as docs/agents/coding-agents.md says, through the built gateway
 * (dist/) against fakes that accept only the
 * stored key. Each turn must complete, no call may be refused (every proxy log
 * line below 400, no Keyward error), the proxy token must never reach the fake,
 * nothing may be sent anywhere but Keyward (a refusing forward proxy records
 * any attempt), and the token's usage and spend must be what the fake reported
 * at the price book's price (under a budget, so every request was reserved).
 * Claude Code also runs with no key at all but `apiKeyHelper` set to the built
 * CLI's `keyward token`, after a `keyward login` against a real OpenID provider
 * (oidc-provider): the personal token it prints is what Claude Code sends.
 */
import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, createCredential, createOrg, mintToken, spawnServer, tempDir, type Org, type SpawnedServer } from '../support/app.js';
import { startFrontDoor, startProvider, type TestProvider } from '../support/openid-provider.js';
import { approveDevice, Browser } from '../support/sign-in.js';
import { run, type Run } from './run.js';
import { REPLY, startAnthropicFake, startOpenAIFake, startOutside, type Fake, type Outside } from './fakes.js';

const DIR = process.env.KEYWARD_AGENTS_DIR!;
const bin = (name: string) => path.join(DIR, 'node_modules', '.bin', name);
const ANTHROPIC_KEY = 'test-anthropic-stored-key-0123456789abcdef';
const OPENAI_KEY = 'test-openai-stored-key-0123456789abcdef';

interface World {
  gateway: SpawnedServer;
  /** The gateway's public URL (a front door that forwards to it), where the OpenID provider sends people back. */
  publicUrl: string;
  provider: TestProvider;
  org: Org;
  anthropic: Fake;
  openai: Fake;
  outside: Outside;
  credentials: { anthropic: string; openai: string };
}

let world: World;
/** What the shared world takes down after the last test (ava hooks have no t.teardown). */
const teardowns: Array<() => unknown> = [];
const shared = { teardown: (fn: () => unknown) => void teardowns.push(fn) } as unknown as ExecutionContext;
test.after.always(async () => {
  for (const fn of teardowns.reverse()) await fn();
});

test.before(async () => {
  const [anthropic, openai, outside, front] = await Promise.all([startAnthropicFake(ANTHROPIC_KEY), startOpenAIFake(OPENAI_KEY), startOutside(), startFrontDoor()]);
  teardowns.push(() => Promise.all([anthropic.close(), openai.close(), outside.close(), front.close()]));
  const provider = await startProvider({ redirectUri: `${front.url}/v1/sso/callback` });
  teardowns.push(() => provider.close());
  const gateway = await spawnServer(shared, {
    KEYWARD_DATA_DIR: tempDir(shared), KEYWARD_LOG_LEVEL: 'info',
    KEYWARD_UPSTREAM_ANTHROPIC: anthropic.url, KEYWARD_UPSTREAM_OPENAI: openai.url,
    KEYWARD_PUBLIC_URL: front.url, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1',
  });
  front.target(gateway.port);
  const org = await createOrg(gateway.url);
  const sso = await api(gateway.url, 'PUT', '/v1/orgs/self/sso', {
    token: org.token, body: { issuer: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret, allowed_domains: ['acme.test'] },
  });
  if (sso.status !== 200) throw new Error(`single sign-on not configured: ${sso.status} ${sso.text}`);
  const credentials = { anthropic: await createCredential(gateway.url, org, 'anthropic', ANTHROPIC_KEY), openai: await createCredential(gateway.url, org, 'openai', OPENAI_KEY) };
  world = { gateway, publicUrl: front.url, provider, org, anthropic, openai, outside, credentials };
});

/** What every agent process gets: its own HOME, and a proxy that refuses (and records) anything not bound for 127.0.0.1. */
function agentEnv(t: ExecutionContext, extra: Record<string, string>): { env: Record<string, string>; home: string } {
  const home = tempDir(t, 'keyward-agent-home-');
  const proxy = world.outside.url;
  return {
    home,
    env: {
      PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb',
      HTTPS_PROXY: proxy, HTTP_PROXY: proxy, ALL_PROXY: proxy, https_proxy: proxy, http_proxy: proxy, all_proxy: proxy,
      NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost',
      ...extra,
    },
  };
}

/** The gateway's proxy log lines of one token. */
const proxyLines = (tokenId: string): Array<Record<string, any>> =>
  world.gateway.lines.map((l) => {
    try {
      return JSON.parse(l) as Record<string, any>;
    } catch {
      return {};
    }
  }).filter((l) => l.message === 'proxy request' && l.keyward?.token === tokenId);

/** The token's usage once `requests` requests are counted (sessions count when they close). */
async function usageOf(tokenId: string, requests: number): Promise<{ requests: number; input_tokens: number; output_tokens: number; spend_usd: string }> {
  // Counted when each request or session closes in the gateway (another process): a real event, given up to 30 s
  // (a busy machine is slow); then the caller's assertions say what was counted.
  for (const deadline = performance.now() + 30_000; ;) {
    const usage = (await api(world.gateway.url, 'GET', `/v1/tokens/${tokenId}`, { token: world.org.token })).body.usage;
    if (usage.requests >= requests || performance.now() > deadline) return usage;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What a turn must show whatever the agent: completed, nothing refused, the key upstream and never the token, nothing sent elsewhere. */
function common(t: ExecutionContext, r: Run, fake: Fake, token: { id: string; token: string }, statusOk: (status: number) => boolean): Array<Record<string, any>> {
  t.is(r.code, 0, `the agent exits 0\nstdout: ${r.stdout}\nstderr: ${r.stderr.slice(-3000)}`);
  t.true(r.stdout.includes(REPLY), 'the fake\'s answer reaches the user');
  const lines = proxyLines(token.id);
  t.true(lines.length > 0, 'the gateway proxied its calls');
  for (const l of lines) {
    t.true(statusOk(l.httpRequest.status), `not refused: ${l.httpRequest.requestMethod} ${l.httpRequest.requestUrl} → ${l.httpRequest.status}`);
    t.is(l.keyward.error, undefined, 'no Keyward error');
    t.true(l.keyward.forwarded, 'forwarded');
  }
  t.false(fake.everything().includes(token.token), 'the proxy token never reaches the provider');
  t.false(fake.everything().includes('ptok_'), 'no proxy token at all');
  t.deepEqual(world.outside.attempts, [], 'nothing sent anywhere but Keyward');
  t.false(world.gateway.lines.join('\n').includes(token.token), 'the token is never logged');
  return lines;
}

test.serial('Claude Code: `claude -p` with ANTHROPIC_BASE_URL, the ptok as ANTHROPIC_API_KEY and nonessential traffic off', async (t) => {
  const token = await mintToken(world.gateway.url, world.org, world.credentials.anthropic, '1h', { budget_usd: '50' });
  const before = world.anthropic.seen.length;
  const { env, home } = agentEnv(t, {
    ANTHROPIC_BASE_URL: `${world.gateway.url}/v1/proxy`, ANTHROPIC_API_KEY: token.token, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  });
  const r = await run(bin('claude'), ['-p', 'Reply with the single word pong.'], env, home);
  const lines = common(t, r, world.anthropic, token, (s) => s < 400);
  const calls = world.anthropic.seen.slice(before);
  t.true(calls.length > 0 && calls.every((c) => c.headers['x-api-key'] === ANTHROPIC_KEY), 'the stored key upstream, on every call');
  const turns = calls.filter((c) => c.method === 'POST' && c.url.startsWith('/v1/messages?'));
  t.true(turns.length >= 1);
  t.true(turns.every((c) => JSON.parse(c.body).model === 'claude-opus-5-5'), 'its default model, priced in providers/anthropic.ts');
  // Each turn: 1,200 input, 300 cache reads, 100 cache writes, 7 output at Opus 5.5's $4 / $0.20 / $5 / $20 per million.
  const usage = await usageOf(token.id, lines.length);
  t.is(usage.requests, lines.length);
  t.is(usage.input_tokens, 1_600 * turns.length);
  t.is(usage.output_tokens, 7 * turns.length);
  t.is(usage.spend_usd, usd(5_500 * turns.length), 'spend = usage × price');
});

/** The built CLI (`keyward`), run by the Node that runs the tests. */
const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/src/cli/main.js');
const sh = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;

/** `keyward login` with the built CLI into `configDir`, the device code approved at the provider by `person`; the stored session. */
async function keywardLogin(t: ExecutionContext, configDir: string): Promise<{ member: { id: string } }> {
  const child = spawn(process.execPath, [CLI, 'login', '--gateway', world.publicUrl, '--org', world.org.id], {
    env: { PATH: process.env.PATH ?? '', KEYWARD_CONFIG_DIR: configDir, KEYWARD_LOGIN_POLL_MS: '100' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const link = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = /open (\S+)/.exec(stderr);
      if (m) resolve(m[1]!);
    });
    void exited.then(() => reject(new Error(`keyward login ended before printing a link: ${stderr}`)));
  });
  t.is((await approveDevice(new Browser(), link)).status, 200, 'the person approves the code at the provider');
  t.is(await exited, 0, stderr);
  return JSON.parse(readFileSync(path.join(configDir, 'session.json'), 'utf8'));
}

test.serial('Claude Code: `apiKeyHelper` runs `keyward token` (a personal token of a signed-in member); the stored key upstream, never the ptok', async (t) => {
  world.provider.nextPerson = { sub: 'grace', email: 'grace@acme.test', name: 'Grace', groups: ['engineers'] };
  const configDir = path.join(tempDir(t, 'keyward-config-'), 'keyward');
  const session = await keywardLogin(t, configDir);
  // The member's monthly budget: every request of its personal tokens is reserved under it.
  t.is((await api(world.gateway.url, 'PATCH', `/v1/members/${session.member.id}`, { token: world.org.token, body: { budget_usd: '50' } })).status, 200);
  const before = world.anthropic.seen.length;
  const { env, home } = agentEnv(t, { ANTHROPIC_BASE_URL: `${world.gateway.url}/v1/proxy`, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', KEYWARD_CONFIG_DIR: configDir });
  mkdirSync(path.join(home, '.claude'), { recursive: true });
  const helper = [process.execPath, CLI, 'token', '--credential', world.credentials.anthropic].map(sh).join(' ');
  writeFileSync(path.join(home, '.claude', 'settings.json'), JSON.stringify({ apiKeyHelper: helper }));
  const r = await run(bin('claude'), ['-p', 'Reply with the single word pong.'], env, home);

  const token = await personalToken(t, configDir, session.member.id, world.credentials.anthropic);
  const lines = common(t, r, world.anthropic, token, (s) => s < 400);
  const calls = world.anthropic.seen.slice(before);
  t.true(calls.length > 0 && calls.every((c) => c.headers['x-api-key'] === ANTHROPIC_KEY), 'the stored key upstream, on every call');
  t.true(calls.every((c) => c.headers.authorization === undefined || !c.headers.authorization.includes('ptok_')));
  const turns = calls.filter((c) => c.method === 'POST' && c.url.startsWith('/v1/messages?'));
  t.true(turns.length >= 1);
  const usage = await usageOf(token.id, lines.length);
  t.is(usage.requests, lines.length);
  t.is(usage.spend_usd, usd(5_500 * turns.length), 'spend = usage × price, on the member\'s personal token');
  const audit = (await api(world.gateway.url, 'GET', '/v1/audit', { token: world.org.token })).body.data
    .find((e: { action: string; target?: string }) => e.action === 'token.create' && e.target === token.id);
  t.is(audit?.actor, session.member.id, 'the audit names the person');
});

/** The one personal token the helper minted for `memberId` and `credentialId` (then served from its cache), and its value from that cache. */
async function personalToken(t: ExecutionContext, configDir: string, memberId: string, credentialId: string): Promise<{ id: string; token: string }> {
  const minted = (await api(world.gateway.url, 'GET', '/v1/tokens', { token: world.org.token })).body.data
    .filter((x: { member_id?: string; credential_id?: string }) => x.member_id === memberId && x.credential_id === credentialId);
  t.is(minted.length, 1, 'one personal token, minted by the command (then cached)');
  const cache = JSON.parse(readFileSync(path.join(configDir, 'token-cache.json'), 'utf8')) as Array<{ token: string }>;
  t.is(cache.length, 1);
  const token = { id: minted[0].id as string, token: cache[0]!.token };
  t.regex(token.token, /^ptok_/);
  return token;
}

test.serial('Codex CLI, a config.toml provider whose `auth.command` runs `keyward token`: the stored key upstream, never the ptok', async (t) => {
  world.provider.nextPerson = { sub: 'grace', email: 'grace@acme.test', name: 'Grace', groups: ['engineers'] };
  const configDir = path.join(tempDir(t, 'keyward-config-'), 'keyward');
  const session = await keywardLogin(t, configDir);
  const before = world.openai.seen.length;
  const home = codexHome(t, [
    'model_provider = "keyward"', '',
    '[model_providers.keyward]', 'name = "Keyward"', `base_url = "${world.gateway.url}/v1/proxy/v1"`, 'wire_api = "responses"', '',
    '[model_providers.keyward.auth]', `command = ${JSON.stringify(process.execPath)}`,
    `args = ${JSON.stringify([CLI, 'token', '--credential', world.credentials.openai])}`, 'refresh_interval_ms = 3000000', QUIET,
  ].join('\n'));
  const { env } = agentEnv(t, { CODEX_HOME: home, KEYWARD_CONFIG_DIR: configDir });
  const work = tempDir(t, 'keyward-codex-work-');
  const r = await run(bin('codex'), ['exec', '--skip-git-repo-check', 'Reply with the single word pong.'], env, work);
  const token = await personalToken(t, configDir, session.member.id, world.credentials.openai);
  const lines = common(t, r, world.openai, token, (s) => s === 200);
  const calls = world.openai.seen.slice(before);
  t.true(calls.length > 0 && calls.every((c) => c.headers.authorization === `Bearer ${OPENAI_KEY}`), 'the stored key upstream');
  // With a command for its key, Codex also lists the provider's models (GET /v1/models), proxied like any call.
  t.true(calls.every((c) => (c.method === 'POST' && c.url === '/v1/responses') || (c.method === 'GET' && c.url.startsWith('/v1/models'))), 'HTTPS requests only');
  const creates = calls.filter((c) => c.method === 'POST' && c.url === '/v1/responses').map((c) => JSON.parse(c.body) as Record<string, any>);
  t.true(creates.length >= 1, 'a turn over HTTPS');
  const expected = codexSpend(creates);
  const usage = await usageOf(token.id, lines.length);
  t.is(usage.requests, lines.length);
  t.is(usage.spend_usd, expected.usd);
});

/** `usd` of a whole number of µ$, as the API writes it. */
const usd = (micros: number): string => (micros / 1e6).toFixed(6).replace(/0+$/, '').replace(/\.$/, '');
/** µ$ of `tokens` at `usdPerMillion`, rounded up as the price book rounds each part. */
const cost = (tokens: number, usdPerMillion: number): number => Math.ceil(tokens * usdPerMillion - 1e-9);

/** Runs `code` as an ES module in the scratch folder, where the SDKs are installed (as a user's script would import them). */
const script = (code: string, env: Record<string, string>, cwd = DIR) => run(process.execPath, ['--input-type=module', '-e', code], { ...env, NODE_USE_ENV_PROXY: '1' }, cwd);

/** A CODEX_HOME holding `config` as its config.toml; the agent runs in a scratch folder of its own. */
function codexHome(t: ExecutionContext, config: string): string {
  const home = tempDir(t, 'keyward-codex-home-');
  mkdirSync(home, { recursive: true });
  writeFileSync(path.join(home, 'config.toml'), config);
  return home;
}

/** The switches docs/agents/coding-agents.md gives: no analytics export, no plugin sync (both reach OpenAI's and GitHub's hosts). */
const QUIET = '\n[analytics]\nenabled = false\n\n[features]\nplugins = false\n';

/** Codex's responses: the fake reports 1,500 input (500 cached) and 9 output, none for a warm-up (`generate: false`), at GPT-6.1 Sol's $2 / $0.10 / $10. */
function codexSpend(creates: Array<Record<string, any>>): { input: number; output: number; usd: string } {
  const generated = creates.filter((c) => c.generate !== false).length;
  const micros = creates.length * (1000 * 2 + 500 * 0.1) + generated * 9 * 10;
  return { input: 1500 * creates.length, output: 9 * generated, usd: usd(micros) };
}

test.serial('Codex CLI, built-in provider: `openai_base_url` at Keyward, the Responses API over WebSocket, no fallback to HTTPS', async (t) => {
  const token = await mintToken(world.gateway.url, world.org, world.credentials.openai, '1h', { budget_usd: '50' });
  const before = world.openai.seen.length;
  const home = codexHome(t, `openai_base_url = "${world.gateway.url}/v1/proxy/v1"\n${QUIET}`);
  const { env } = agentEnv(t, { CODEX_HOME: home, CODEX_API_KEY: token.token });
  const work = tempDir(t, 'keyward-codex-work-');
  const r = await run(bin('codex'), ['exec', '--skip-git-repo-check', 'Reply with the single word pong.'], env, work);
  const lines = common(t, r, world.openai, token, (s) => s === 101);
  t.notRegex(r.stderr, /Falling back|Reconnecting|403|path_not_allowed/, 'no refused handshake, no fallback');
  const calls = world.openai.seen.slice(before);
  t.true(calls.length > 0 && calls.every((c) => c.headers.authorization === `Bearer ${OPENAI_KEY}`), 'the stored key upstream');
  t.true(calls.every((c) => c.method === 'GET' && c.url === '/v1/responses' && c.messages !== undefined), 'WebSocket sessions only');
  const creates = calls.flatMap((c) => c.messages!.map((m) => JSON.parse(m) as Record<string, any>)).filter((m) => m.type === 'response.create');
  t.true(creates.some((c) => c.generate !== false), 'a turn was asked for');
  t.true(creates.every((c) => c.model === 'gpt-6.1-sol'), 'its default model, priced in providers/openai.ts');
  const expected = codexSpend(creates);
  const usage = await usageOf(token.id, lines.length);
  t.is(usage.requests, lines.length, 'one request per session');
  t.is(usage.input_tokens, expected.input);
  t.is(usage.output_tokens, expected.output);
  t.is(usage.spend_usd, expected.usd, 'every response settled at usage × price');
});

test.serial('Codex CLI, a config.toml provider: `wire_api = "responses"` over HTTPS with the ptok from `env_key`', async (t) => {
  const token = await mintToken(world.gateway.url, world.org, world.credentials.openai, '1h', { budget_usd: '50' });
  const before = world.openai.seen.length;
  const home = codexHome(t, [
    'model_provider = "keyward"', '',
    '[model_providers.keyward]', 'name = "Keyward"', `base_url = "${world.gateway.url}/v1/proxy/v1"`, 'env_key = "KEYWARD_TOKEN"', 'wire_api = "responses"', QUIET,
  ].join('\n'));
  const { env } = agentEnv(t, { CODEX_HOME: home, KEYWARD_TOKEN: token.token });
  const work = tempDir(t, 'keyward-codex-work-');
  const r = await run(bin('codex'), ['exec', '--skip-git-repo-check', 'Reply with the single word pong.'], env, work);
  const lines = common(t, r, world.openai, token, (s) => s === 200);
  const calls = world.openai.seen.slice(before);
  t.true(calls.length > 0 && calls.every((c) => c.headers.authorization === `Bearer ${OPENAI_KEY}`), 'the stored key upstream');
  t.true(calls.every((c) => c.method === 'POST' && c.url === '/v1/responses'), 'HTTPS requests only');
  const creates = calls.map((c) => JSON.parse(c.body) as Record<string, any>);
  t.true(creates.every((c) => c.model === 'gpt-6.1-sol'));
  const expected = codexSpend(creates);
  const usage = await usageOf(token.id, lines.length);
  t.is(usage.requests, lines.length);
  t.is(usage.input_tokens, expected.input);
  t.is(usage.output_tokens, expected.output);
  t.is(usage.spend_usd, expected.usd);
});

test.serial('OpenAI Agents SDK: OPENAI_BASE_URL, the ptok as OPENAI_API_KEY, tracing off; its default model over the Responses API', async (t) => {
  const token = await mintToken(world.gateway.url, world.org, world.credentials.openai, '1h', { budget_usd: '50' });
  const before = world.openai.seen.length;
  const { env } = agentEnv(t, { OPENAI_BASE_URL: `${world.gateway.url}/v1/proxy/v1`, OPENAI_API_KEY: token.token, OPENAI_AGENTS_DISABLE_TRACING: '1' });
  const r = await script(`
    import { Agent, run } from '@openai/agents';
    const result = await run(new Agent({ name: 'pinger', instructions: 'Answer in one word.' }), 'Reply with the single word pong.');
    console.log(result.finalOutput);`, env);
  const lines = common(t, r, world.openai, token, (s) => s === 200);
  const calls = world.openai.seen.slice(before);
  t.true(calls.length > 0 && calls.every((c) => c.method === 'POST' && c.url === '/v1/responses' && c.headers.authorization === `Bearer ${OPENAI_KEY}`));
  const bodies = calls.map((c) => JSON.parse(c.body) as Record<string, any>);
  t.true(bodies.every((b) => b.model === 'gpt-5.6-luna'), 'its default model, priced in providers/openai.ts');
  // 1,000 uncached and 500 cached input, 9 output at GPT-5.6 Luna's $0.20 / $0.02 / $1.20.
  const usage = await usageOf(token.id, lines.length);
  t.is(usage.requests, lines.length);
  t.is(usage.spend_usd, usd(bodies.length * (cost(1000, 0.2) + cost(500, 0.02) + cost(9, 1.2))));
});

test.serial('Claude Agent SDK: query() with the Claude Code variables in its environment', async (t) => {
  const token = await mintToken(world.gateway.url, world.org, world.credentials.anthropic, '1h', { budget_usd: '50' });
  const before = world.anthropic.seen.length;
  const { env, home } = agentEnv(t, {
    ANTHROPIC_BASE_URL: `${world.gateway.url}/v1/proxy`, ANTHROPIC_API_KEY: token.token, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  });
  const r = await script(`
    import { query } from '@anthropic-ai/claude-agent-sdk';
    for await (const m of query({ prompt: 'Reply with the single word pong.', options: { cwd: ${JSON.stringify(home)} } })) {
      if (m.type === 'result') console.log(m.result);
    }`, env);
  const lines = common(t, r, world.anthropic, token, (s) => s < 400);
  const turns = world.anthropic.seen.slice(before).filter((c) => c.method === 'POST' && c.url.startsWith('/v1/messages?'));
  t.true(turns.length >= 1 && turns.every((c) => c.headers['x-api-key'] === ANTHROPIC_KEY && JSON.parse(c.body).model === 'claude-opus-5-5'));
  const usage = await usageOf(token.id, lines.length);
  t.is(usage.requests, lines.length);
  t.is(usage.spend_usd, usd(5_500 * turns.length));
});
