/**
 * Test support: gateways (one, or several in this process over one shared SQLite file, as instances share
 * a store) in front of the billing fake (billing-provider.ts) for every provider it speaks: Anthropic,
 * OpenAI, Gemini, Bedrock (an API key) and Vertex (the gateway's ambient identity, from a fake metadata
 * server). One organisation with a credential per provider; tokens are minted per test. `priceOf` prices
 * what the fake billed with the provider files' own prices; `chargeOf` reads what the gateway charged a
 * request (its log line's spend_usd). `pool` makes a pool of new credentials whose keys tell the fake what
 * each member does (time out, reset after the body, 429, 503, answer), and `poolToken` a token for it.
 *
 * Instances are in this process (startApp) by default; `spawn: true` makes them child processes running the
 * built server (spawnServer, the same data dir and env), which a test can kill with SIGKILL (`kill`).
 */
import type { ExecutionContext } from 'ava';
import { parseUsd } from '../../src/pricing/money.js';
import { PriceBook, usageCost, type PriceEntry } from '../../src/pricing/prices.js';
import { api, createOrg, spawnServer, startApp, tempDir, type Org } from './app.js';
import { startBillingProvider, SHAPE_SPECS, VERTEX_LOCATION, VERTEX_PROJECT, type Bill, type BillingProvider, type MemberBehaviour, type ShapeSpec } from './billing-provider.js';
import { IssuedTokens, startFakeGoogleAuth } from './cloud/google-auth.js';
import { shippedTable } from './shipped-prices.js';
import { eventually } from './wait.js';

export type BilledProvider = ShapeSpec['provider'];
export const PROVIDERS: readonly BilledProvider[] = ['anthropic', 'openai', 'gemini', 'bedrock', 'vertex'];

const book = new PriceBook([{ tables: Object.fromEntries(PROVIDERS.map((p) => [p, shippedTable(p)])), source: () => 'test' }]);

/** The provider file's price of a shape's model. */
export function priceOf(provider: BilledProvider, model: string): PriceEntry {
  const price = book.lookup(provider, model);
  if (!price) throw new Error(`${provider} has no price for ${model}`);
  return price;
}

/** µ$ the fake's bill comes to at the provider file's prices (tool uses at `perUseMicros` each). */
export function billCost(bill: Bill, perUseMicros = 0): number {
  const spec = SHAPE_SPECS[bill.shape];
  return usageCost(priceOf(spec.provider, spec.model), { inputTokens: bill.input, outputTokens: bill.output }) + bill.toolUses * perUseMicros;
}

/** One gateway instance, in this process or a child process. */
export interface Instance {
  url: string;
  /** Its log lines so far, parsed. */
  logs(): Array<Record<string, unknown>>;
  /** Child processes only: sends the signal and resolves with the exit code. */
  kill?(signal: NodeJS.Signals): Promise<number | null>;
}

export interface BillingGateway {
  apps: Instance[];
  fake: BillingProvider;
  org: Org;
  credentials: Record<BilledProvider, string>;
  /** Mints a token for `provider`'s credential with these scopes (through instance 0). */
  token(provider: BilledProvider, scopes?: Record<string, unknown>, org?: Org): Promise<{ id: string; token: string }>;
  /** A pool (of `strategy`) of new `provider` credentials, one per behaviour, each doing what its key names; its id. */
  pool(provider: 'anthropic' | 'openai', behaviours: readonly MemberBehaviour[], strategy: string): Promise<string>;
  /** Mints a token for pool `poolId` with these scopes. */
  poolToken(poolId: string, scopes?: Record<string, unknown>): Promise<{ id: string; token: string }>;
  /** A second organisation with its own credentials (for org caps). */
  newOrg(name: string): Promise<{ org: Org; credentials: Record<BilledProvider, string> }>;
  /** µ$ the gateway charged the request (its log line's spend_usd), once the request's log line is written. */
  chargeOf(requestId: string): Promise<number | undefined>;
}


export async function billingGateway(t: ExecutionContext, options: { instances?: number; spawn?: boolean; env?: Record<string, string> } = {}): Promise<BillingGateway> {
  const fake = await startBillingProvider();
  t.teardown(() => fake.close());
  const google = await startFakeGoogleAuth([], new IssuedTokens());
  t.teardown(() => google.close());
  const dataDir = tempDir(t);
  const env = {
    KEYWARD_UPSTREAM_ANTHROPIC: fake.url, KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_UPSTREAM_GEMINI: fake.url,
    KEYWARD_UPSTREAM_BEDROCK: fake.url, KEYWARD_UPSTREAM_VERTEX: fake.url,
    GCE_METADATA_HOST: google.metadataHost, KEYWARD_AMBIENT_PROJECTS: VERTEX_PROJECT,
    KEYWARD_FREE_PROXY_REQUESTS: '1000000', KEYWARD_FREE_CREDENTIALS: '100',
    ...options.env,
  };
  const start = async (): Promise<Instance> => {
    if (!options.spawn) {
      const app = await startApp(t, { dataDir, env });
      return { url: app.url, logs: () => app.logs };
    }
    const child = await spawnServer(t, { ...env, KEYWARD_DATA_DIR: dataDir, KEYWARD_LOG_LEVEL: 'debug' });
    const parsed = (): Array<Record<string, unknown>> => child.lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
    return { url: child.url, logs: parsed, kill: (signal) => child.kill(signal) };
  };
  const apps: Instance[] = [];
  // One after another: the first creates the data dir's key and database, the others open them.
  for (let i = 0; i < (options.instances ?? 1); i++) apps.push(await start());
  const app = apps[0]!.url;
  const credentialsOf = async (org: Org): Promise<Record<BilledProvider, string>> => {
    const create = async (body: Record<string, unknown>): Promise<string> => {
      const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body });
      if (r.status !== 201) throw new Error(`credential create failed: ${r.status} ${r.text}`);
      return r.body.id;
    };
    return {
      anthropic: await create({ provider: 'anthropic', api_key: 'sk-ant-bill-0123456789' }),
      openai: await create({ provider: 'openai', api_key: 'sk-openai-bill-0123456789' }),
      gemini: await create({ provider: 'gemini', api_key: 'AIza-bill-0123456789' }),
      bedrock: await create({ provider: 'bedrock', region: 'us-east-1', api_key: 'ABSKbillingkey0123456789' }),
      vertex: await create({ provider: 'vertex', project: VERTEX_PROJECT, location: VERTEX_LOCATION, ambient: 'true' }),
    };
  };
  const org = await createOrg(app, 'billing');
  const credentials = await credentialsOf(org);
  const memberCredentials = new Map<string, string>();
  return {
    apps, fake, org, credentials,
    async token(provider, scopes = {}, owner = org) {
      const creds = owner === org ? credentials : await credentialsOf(owner);
      const r = await api(app, 'POST', '/v1/tokens', { token: owner.token, body: { credential_id: creds[provider], ttl: '1h', ...scopes } });
      if (r.status !== 201) throw new Error(`token mint failed: ${r.status} ${r.text}`);
      return { id: r.body.id, token: r.body.token };
    },
    async pool(provider, behaviours, strategy) {
      const members: Array<{ credential_id: string }> = [];
      for (const [i, b] of behaviours.entries()) {
        // The same key is one credential, whatever pools it is in (each pool cools its members on its own).
        const key = `${provider === 'anthropic' ? 'sk-ant' : 'sk-openai'}-bill-member-${b}-${i}-0123456789`;
        let id = memberCredentials.get(key);
        if (id === undefined) {
          const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider, api_key: key } });
          if (r.status !== 201) throw new Error(`member create failed: ${r.status} ${r.text}`);
          memberCredentials.set(key, (id = r.body.id as string));
        }
        members.push({ credential_id: id });
      }
      const p = await api(app, 'POST', '/v1/pools', { token: org.token, body: { members, strategy } });
      if (p.status !== 201) throw new Error(`pool create failed: ${p.status} ${p.text}`);
      return p.body.id;
    },
    async poolToken(poolId, scopes = {}) {
      const r = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { pool_id: poolId, ttl: '1h', ...scopes } });
      if (r.status !== 201) throw new Error(`pool token mint failed: ${r.status} ${r.text}`);
      return { id: r.body.id, token: r.body.token };
    },
    async newOrg(name) {
      const other = await createOrg(app, name);
      return { org: other, credentials: await credentialsOf(other) };
    },
    async chargeOf(requestId) {
      // The access log line is written when the response closes: a real event, given up to 20 s (a busy machine is slow).
      const lineOf = () => apps.map((a) => a.logs().find((l) => l.message === 'proxy request' && (l.keyward as { request_id?: string } | undefined)?.request_id === requestId)).find((l) => l !== undefined);
      await eventually(() => lineOf() !== undefined, `the log line of ${requestId}`, 20_000, 10);
      const spend = (lineOf()!.keyward as { spend_usd?: string }).spend_usd;
      return spend === undefined ? undefined : parseUsd(spend);
    },
  };
}
