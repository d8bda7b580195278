/**
 * A gateway and a fake provider whose answer depends on the key it receives (the pool tests): each member
 * credential's key names what it does (`ok`, a status, `reset` before answering, `cut` after the first
 * bytes of a stream), and every request is recorded with the key it came with.
 */
import type { ExecutionContext } from 'ava';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { api, createCredential, createOrg, startApp, type Org, type StartOptions, type TestApp } from './app.js';
import { defaultHandler, startFakeProvider, type FakeProvider } from './fake-provider.js';

/** `ok`: a small completion; `default`: the fake provider's own answer for the path (any provider's shape). */
export type Behaviour = 'ok' | 'default' | 'reset' | 'cut' | number | ((res: ServerResponse) => void);

export interface PoolFixture {
  app: TestApp;
  fake: FakeProvider;
  org: Org;
  /** Member credential ids, in the order given. */
  members: string[];
  /** The key each member holds, in the same order. */
  keys: string[];
  /** Which member (index) each request reached, in arrival order. */
  hits: number[];
  /** What a member does from now on. */
  behave(member: number, b: Behaviour): void;
  /** A pool of the members, and a token for it. */
  pool(body?: Record<string, unknown>, scopes?: Record<string, unknown>): Promise<{ id: string; token: string }>;
  chat(token: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
}

const completion = { id: 'chatcmpl-pool', object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'pooled' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } };

function answer(res: ServerResponse, b: Exclude<Behaviour, 'default'>): void {
  if (typeof b === 'function') return b(res);
  if (b === 'reset') return void res.socket?.destroy();
  if (b === 'cut') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n');
    setTimeout(() => res.socket?.destroy(), 50);
    return;
  }
  const status = b === 'ok' ? 200 : b;
  const body = JSON.stringify(status === 200 ? completion : { error: { message: `member said ${status}`, type: 'rate_limit_error', code: String(status) } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...(status === 429 ? { 'retry-after': '20' } : {}) });
  res.end(body);
}

export async function poolFixture(t: ExecutionContext, behaviours: Behaviour[], options: StartOptions & { provider?: 'openai' | 'anthropic' } = {}): Promise<PoolFixture> {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { ...options, env: { KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_UPSTREAM_ANTHROPIC: fake.url, ...options.env } });
  const org = await createOrg(app);
  const keys = behaviours.map((_, i) => `sk-member${i}-${'x'.repeat(24)}`);
  const members: string[] = [];
  for (const k of keys) members.push(await createCredential(app, org, options.provider ?? 'openai', k));
  const now = [...behaviours];
  const hits: number[] = [];
  fake.handler = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const presented = String(req.headers['x-api-key'] ?? req.headers.authorization ?? '').replace(/^Bearer /, '');
    const i = keys.indexOf(presented);
    hits.push(i);
    if (i === -1) return answer(res, 401);
    if (now[i] === 'default') return defaultHandler(req, res, body);
    answer(res, now[i] as Exclude<Behaviour, 'default'>);
  };
  return {
    app, fake, org, members, keys, hits,
    behave: (i, b) => { now[i] = b; },
    async pool(body = {}, scopes = {}) {
      const p = await api(app, 'POST', '/v1/pools', { token: org.token, body: { members: members.map((credential_id) => ({ credential_id })), ...body } });
      if (p.status !== 201) throw new Error(`pool create failed: ${p.status} ${p.text}`);
      const tk = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { pool_id: p.body.id, ttl: '15m', ...scopes } });
      if (tk.status !== 201) throw new Error(`pool token failed: ${tk.status} ${tk.text}`);
      return { id: p.body.id, token: tk.body.token };
    },
    chat: (token, body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 }, headers = {}) =>
      fetch(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) }),
  };
}
