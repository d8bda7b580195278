/**
 * The federation row: on the same Keyward process, an Azure OpenAI credential holding a key
 * (`api-key` upstream) against a federated one (no secret: an Entra token minted with Keyward's own
 * JWT, cached, sent as Bearer), same body, interleaved rounds of c=1 latency and saturation, and the
 * server's CPU per request during each saturation run. At steady state a federated request costs a
 * cache lookup, so the two should match within noise; the one mint happens before the first round.
 *
 * The Entra token endpoint is a stub in this process (startEntraStub in bench/lib/upstreams.ts): it answers
 * every grant with a fresh one-hour token and counts them, so the row also shows how many mints its load caused.
 *
 * Alone: `npm run bench -- federation`, on one fresh Keyward set up as the whole run's.
 */
import { compareTargets, type Measured } from '../lib/compare.js';
import type { Target } from '../lib/load.js';
import { startSideKeyward } from '../lib/paths.js';
import { fmt, type Goal } from '../lib/report.js';
import { ADMIN_TOKEN, LoadWorker, postJson as post, type Proc } from '../lib/servers.js';
import { BODY, D, KEY, log, sideOptions } from '../lib/settings.js';
import { standaloneSide } from '../lib/standalone.js';

export interface FederationRow {
  static: Measured;
  federated: Measured;
  /** Federated CPU µs/request ÷ static. */
  cpuRatio: number;
  /** Entra grants the federated credential's requests caused (one expected). */
  mints: number;
}

export async function federationRow(worker: LoadWorker, keyward: Proc, entra: { grants(): number }, key: string, body: string,
  o: { rounds: number; c1Ms: number; satS: number; connections: number }, log: (m: string) => void): Promise<FederationRow> {
  const base = `http://127.0.0.1:${keyward.port}`;
  const org = await post(`${base}/v1/orgs`, ADMIN_TOKEN, { name: 'bench-federation' });
  const keyCred = await post(`${base}/v1/credentials`, org.token, { provider: 'azure', resource: 'bench', api_key: key });
  const fedCred = await post(`${base}/v1/credentials`, org.token, {
    provider: 'azure', resource: 'bench', tenant_id: '72f988bf-86f1-41af-91ab-2d7cd011db47', client_id: '0f2b6e3a-4c1d-4e5f-9a8b-7c6d5e4f3a2b', federated: true,
  });
  const tokens = {
    static: (await post(`${base}/v1/tokens`, org.token, { credential_id: keyCred.id, ttl: '1d' })).token as string,
    federated: (await post(`${base}/v1/tokens`, org.token, { credential_id: fedCred.id, ttl: '1d' })).token as string,
  };
  const target = (token: string): Target => ({ url: `${base}/v1/proxy/openai/deployments/bench/chat/completions?api-version=2024-10-21`, headers: { 'api-key': token }, body });
  const { static: s, federated: f } = await compareTargets(worker, keyward, { static: target(tokens.static), federated: target(tokens.federated) }, o, 'federation', log);
  return { static: s, federated: f, cpuRatio: f.cpuUsPerRequest / s.cpuUsPerRequest, mints: entra.grants() };
}

/** The row's line in the bench's tables. */
export const federationSummary = (f: FederationRow, rounds: number): string =>
  `Federated credential (same Keyward, Azure OpenAI, same body; median of ${rounds} rounds): key credential ${fmt(f.static.p50, 3)} ms c=1 p50, ${fmt(f.static.rps, 0)} req/s, ${fmt(f.static.cpuUsPerRequest, 0)} µs CPU/request; federated ${fmt(f.federated.p50, 3)} ms, ${fmt(f.federated.rps, 0)} req/s, ${fmt(f.federated.cpuUsPerRequest, 0)} µs CPU/request (${f.cpuRatio.toFixed(2)}× CPU); ${f.mints} Entra grant${f.mints === 1 ? '' : 's'} for all of its requests.`;

export const federationTargets = (f: FederationRow): Goal[] => [
  { target: 'federated credential CPU per request within 10% of a key credential (steady state)', value: `${f.cpuRatio.toFixed(2)}×`, met: f.cpuRatio <= 1.1 },
];

/** `npm run bench -- federation`: the row alone. */
export async function run(): Promise<void> {
  await standaloneSide('federation', async (s, up) => {
    const keyward = await startSideKeyward(s, up);
    const worker = new LoadWorker('keyward');
    s.closers.push(() => worker.close());
    const federation = await federationRow(worker, keyward, up.entra, KEY, BODY, sideOptions(), log);
    return { fields: { federation }, lines: [federationSummary(federation, D.sideRounds)], targets: federationTargets(federation) };
  });
}
