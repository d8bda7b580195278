/**
 * The bench's federation row: on the same Keyward process, an Azure OpenAI credential holding a key
 * (`api-key` upstream) against a federated one (no secret: an Entra token minted with Keyward's own
 * JWT, cached, sent as Bearer), same body, interleaved rounds of c=1 latency and saturation, and the
 * server's CPU per request during each saturation run. At steady state a federated request costs a
 * cache lookup, so the two should match within noise; the one mint happens before the first round.
 *
 * The Entra token endpoint is a stub in this process (AZURE_AUTHORITY_HOST): it answers every grant
 * with a fresh one-hour token and counts them, so the row also shows how many mints its load caused.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Target } from './lib/load.js';
import { ADMIN_TOKEN, postJson as post, type LoadWorker, type Proc } from './lib/servers.js';
import { compareTargets, type Measured } from './lib/compare.js';

export interface FederationRow {
  static: Measured;
  federated: Measured;
  /** Federated CPU µs/request ÷ static. */
  cpuRatio: number;
  /** Entra grants the federated credential's requests caused (one expected). */
  mints: number;
}

/** A stub Entra token endpoint; its URL (AZURE_AUTHORITY_HOST) and how many grants it served. */
export async function startEntraStub(): Promise<{ url: string; grants: () => number; close(): void }> {
  let grants = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      grants++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token_type: 'Bearer', expires_in: 3599, access_token: `bench-entra-token-${grants}-${'t'.repeat(40)}` }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, grants: () => grants, close: () => server.close() };
}

/** What Keyward needs for the row: itself as an issuer, the stub as Entra, the fake provider as Azure. */
export const federationEnv = (entraUrl: string, upstreamPort: number): Record<string, string> => ({
  KEYWARD_ISSUER_URL: 'http://127.0.0.1:9',
  AZURE_AUTHORITY_HOST: entraUrl,
  KEYWARD_UPSTREAM_AZURE: `http://127.0.0.1:${upstreamPort}`,
});

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
