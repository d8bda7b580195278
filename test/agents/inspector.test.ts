/**
 * MCP Inspector's CLI (`mcp-inspector --cli`, pinned in test/agents/agents.json and installed by `npm run test:agents`)
 * against a Keyward MCP route that is its own authorization server. The token comes from the OAuth flow
 * (registration, sign-in and consent posted over HTTP with the org token, code redeemed with PKCE) for two of the
 * fake server's five tools; with it as an `Authorization: Bearer` header the Inspector lists exactly those two, calls
 * one and is refused the others. Without a header it is answered 401 with `resource_metadata` and ends with an
 * auth error (no TTY, stdin closed): it never hangs and never reaches the server.
 */
import test, { type ExecutionContext } from 'ava';
import path from 'node:path';
import { tempDir } from '../support/app.js';
import { authorizedTokens, startMcpAuth, type McpAuthFixture } from '../mcp-auth/fixture.js';
import { run, type Run } from './run.js';

const DIR = process.env.KEYWARD_AGENTS_DIR!;
const inspector = path.join(DIR, 'node_modules', '.bin', 'mcp-inspector');
const CONSENTED = ['get_issue', 'list_issues'];

/** One CLI invocation against the route, with its own HOME (the Inspector keeps a catalog and OAuth state there). */
function inspect(t: ExecutionContext, f: McpAuthFixture, args: string[]): Promise<Run> {
  const home = tempDir(t, 'keyward-inspector-home-');
  const env = { PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb', NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' };
  return run(inspector, ['--cli', f.resource, '--transport', 'http', '--format', 'json', ...args], env, home, 60_000);
}

const bearer = (token: string) => ['--header', `Authorization: Bearer ${token}`];

test('the Inspector CLI with a token from the flow: tools/list shows the consented tools only, a call runs, an unconsented call is refused', async (t) => {
  const f = await startMcpAuth(t);
  const { access } = await authorizedTokens(f, CONSENTED);

  const listed = await inspect(t, f, [...bearer(access), '--method', 'tools/list']);
  t.is(listed.code, 0, listed.stderr);
  const tools = (JSON.parse(listed.stdout) as { result: { tools: Array<{ name: string }> } }).result.tools.map((x) => x.name);
  t.deepEqual(tools, CONSENTED, 'tools/list is filtered to the consented tools');

  const called = await inspect(t, f, [...bearer(access), '--method', 'tools/call', '--tool-name', 'get_issue', '--tool-args-json', '{"n":3}']);
  t.is(called.code, 0, called.stderr);
  t.is((JSON.parse(called.stdout) as { result: { content: Array<{ text: string }> } }).result.content[0]!.text, 'ran get_issue with {"n":3}');

  const refused = await inspect(t, f, [...bearer(access), '--method', 'tools/call', '--tool-name', 'delete_repo', '--tool-args-json', '{}']);
  t.not(refused.code, 0, 'a tool outside the consent is refused');
  t.deepEqual(f.fake.calls, ['get_issue'], 'only the consented call reached the server');
  for (const r of f.fake.requests) {
    t.is(r.headers.authorization, `Bearer ${f.key}`, 'the server saw the stored key');
    t.false(JSON.stringify(r).includes(access), 'the access token never reached the server');
  }
  t.false(f.app.logText().includes(access), 'the access token is not in the logs');
});

test('the Inspector CLI without a token: 401 with resource_metadata, an auth error, no hang', async (t) => {
  const f = await startMcpAuth(t);
  const challenge = await fetch(f.resource, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
  await challenge.text();
  t.is(challenge.status, 401);
  t.regex(challenge.headers.get('www-authenticate') ?? '', /^Bearer .*resource_metadata="[^"]+"/);

  // --stored-auth-only (what the Inspector's docs say for CI), and without it: an interactive login it cannot run
  // with stdin closed and no TTY. Either way an auth error of its own, at once.
  for (const args of [['--stored-auth-only'], []]) {
    const started = Date.now();
    const bare = await inspect(t, f, [...args, '--method', 'tools/list']);
    t.is(bare.code, 3, `${args.join(' ')}: the Inspector's exit code for an auth error (null: killed at the limit, a hang)`);
    t.is((JSON.parse(bare.stderr || bare.stdout) as { error: { code: string } }).error.code, 'auth_required');
    t.log(`${args.join(' ') || 'interactive'}: exit ${bare.code} after ${Date.now() - started} ms`);
  }
  t.deepEqual(f.fake.requests, [], 'nothing reached the server');
});
