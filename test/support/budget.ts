/**
 * Test support for spend budgets: a gateway (in-process or spawned) with the `priced` test provider
 * (test/support/providers/priced.js) in front of a fake upstream that reports, by default, usage equal to
 * the request's worst case (input: the body's bytes + INPUT_OVERHEAD_TOKENS; output: its max_tokens), so
 * every forwarded request costs exactly what it reserved. `worstCase` prices a body as the gateway does.
 */
import type { ExecutionContext } from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
// app.js first: it loads the container (and reflect-metadata) before any tsyringe class below.
import { createCredential, createOrg, startApp, type Org, type StartOptions, type TestApp } from './app.js';
import { SpendLedger } from '../../src/accounting/spend-ledger.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';
import type { Store } from '../../src/store/ports.js';
import { Symbols } from '../../src/symbols.js';
import { providersDir } from './providers-dir.js';
import { leasedOut } from './leases.js';

/** pm-1's prices in µ$ per token (2 and 8 USD per million tokens). */
export const PM1 = { input: 2, output: 8 };

/** A chat body for pm-1 whose worst case is the same for every `i` (fixed-width padding). */
export function chatBody(i: number, maxTokens = 100, model = 'pm-1'): string {
  return JSON.stringify({ model, max_tokens: maxTokens, messages: [{ role: 'user', content: `hello ${String(i).padStart(6, '0')}` }] });
}

/** The worst case in µ$ of a pm-1 body, as the budget stage computes it. */
export function worstCase(body: string, maxTokens = 100): number {
  return (Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS) * PM1.input + maxTokens * PM1.output;
}

export interface UsageUpstream {
  url: string;
  /** Every body received, in order. */
  received: string[];
  /** Requests whose head arrived (before their bodies ended). */
  started: number;
  /** Replace to report other usage: (body) → usage counts, or undefined for none. */
  usage: (body: string) => { prompt_tokens: number; completion_tokens: number; cached?: number } | undefined;
  /** Answer with this status and an error body (no usage). */
  status: number;
  close(): Promise<void>;
}

/** A fake OpenAI-shaped upstream that reports the worst case as usage unless told otherwise. */
export async function startUsageUpstream(): Promise<UsageUpstream> {
  const up: UsageUpstream = {
    url: '',
    received: [],
    started: 0,
    usage: (body) => {
      const parsed = JSON.parse(body);
      return { prompt_tokens: Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS, completion_tokens: parsed.max_tokens ?? 0 };
    },
    status: 200,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = http.createServer(async (req, res) => {
    up.started++;
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return; // the gateway aborted the request mid-body: no whole body arrived, nothing to answer
    }
    const body = Buffer.concat(chunks).toString('utf8');
    up.received.push(body);
    if (up.status !== 200) {
      const text = JSON.stringify({ error: { message: 'fake error', type: 'fake' } });
      res.writeHead(up.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    const u = up.usage(body);
    const usage = u && { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.prompt_tokens + u.completion_tokens, ...(u.cached ? { prompt_tokens_details: { cached_tokens: u.cached } } : {}) };
    const text = JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion', model: 'pm-1', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], ...(usage ? { usage } : {}) });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  up.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return up;
}

/** One proxied chat request; its status and parsed body. */
export async function chat(base: string, token: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(`${base}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { 'x-proxy-token': token, 'content-type': 'application/json', ...headers }, body });
  const text = await r.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: r.status, body: parsed, headers: r.headers };
}

/** An in-process gateway with the `priced` provider before a usage upstream, an organisation and its credential. */
export interface BudgetSetup {
  app: TestApp;
  up: UsageUpstream;
  org: Org;
  credential: string;
}

/** `options`: the rest of startApp's (an injected clock and timers). */
export async function budgetSetup(t: ExecutionContext, env: Record<string, string> = {}, options: Omit<StartOptions, 'env'> = {}): Promise<BudgetSetup> {
  const up = await startUsageUpstream();
  t.teardown(() => up.close());
  const app = await startApp(t, { ...options, env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']), KEYWARD_UPSTREAM_PRICED: up.url, ...env } });
  const org = await createOrg(app);
  const credential = await createCredential(app, org, 'priced', 'sk-priced-0123456789');
  return { app, up, org, credential };
}

/** What was spent under a ledger key: what the store has leased under it minus what this instance holds unreserved. */
export async function spentOf(app: TestApp, key: string): Promise<number> {
  const store = app.server.container.resolve<Store>(Symbols.Store);
  return (await leasedOut(store, key)) - app.server.container.resolve(SpendLedger).heldOf(key);
}
