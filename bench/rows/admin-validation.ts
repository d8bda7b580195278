/**
 * The admin-validation row, `npm run bench -- admin-validation`: what checking an admin request against its schema costs, in
 * process (no HTTP): the compiled contracts of POST /v1/tokens and POST /v1/credentials (built from
 * the real providers folder), and the paging query, for a good request (one compiled check) and a
 * refused one (the compiled check, then the field-by-field walk that names the field). Prints
 * microseconds per call and calls per second.
 */
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProviderRegistry } from '../../src/catalog/registry.js';
import { credentialCreateContract, credentialCreateSchema, credentialDeclarations } from '../../src/api/schemas/credentials.js';
import { PAGE } from '../../src/api/schemas/query.js';
import { TOKEN_CREATE } from '../../src/api/schemas/tokens.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const N = Number(process.env.BENCH_N ?? 200_000);

function measure(label: string, fn: () => unknown): void {
  for (let i = 0; i < 10_000; i++) fn();
  const started = performance.now();
  for (let i = 0; i < N; i++) fn();
  const us = ((performance.now() - started) * 1000) / N;
  console.log(`${label.padEnd(52)} ${us.toFixed(3).padStart(8)} µs  ${Math.round(1e6 / us).toLocaleString('en').padStart(12)} /s`);
}

const refused = (fn: () => unknown) => () => {
  try {
    fn();
  } catch {
    /* the refusal is what is measured */
  }
};

/** `npm run bench -- admin-validation` (BENCH_N calls per check, default 200,000). */
export async function run(): Promise<void> {
  const registry = await ProviderRegistry.load(path.join(ROOT, 'dist', 'providers'), {});
  const build = performance.now();
  const credentialCreate = credentialCreateContract(credentialCreateSchema(credentialDeclarations(registry)));
  console.log(`credential-create contract for ${registry.ids().length} providers built in ${(performance.now() - build).toFixed(1)} ms`);

  const token = { credential_id: 'cred_4kT9bQ2mXw7Zr1sVc8NpL3aY', ttl: '15m', models: ['gpt-4o-mini', 'o1*'], paths: ['v1/chat/completions'], max_requests: 100, rate_limit: 60 };
  measure('POST /v1/tokens body, good', () => TOKEN_CREATE.parse(token));
  measure('POST /v1/tokens body, bad max_requests (named)', refused(() => TOKEN_CREATE.parse({ ...token, max_requests: '5' })));
  measure('POST /v1/tokens body, unknown field (named)', refused(() => TOKEN_CREATE.parse({ ...token, tll: '1m' })));
  const cred = { provider: 'openai', api_key: 'sk-test-0123456789abcdef', organization: 'org-abc', project: 'proj_abc' };
  measure('POST /v1/credentials body, good', () => credentialCreate.parse(cred));
  measure('POST /v1/credentials body, bad project (named)', refused(() => credentialCreate.parse({ ...cred, project: 'has space' })));
  const query = new URLSearchParams('limit=50&starting_after=tok_4kT9bQ2mXw7Zr1sVc8NpL3aY');
  measure('GET list query, good', () => PAGE.parse(query));
}
