/**
 * Test fakes of Google's token sources, on 127.0.0.1:0, that refuse rather than trust:
 * - a token endpoint (`POST /token`) that VERIFIES the JWT grant's assertion with the
 *   service account's public key (jose jwtVerify: RS256, issuer, audience = its own
 *   URL, kid = private_key_id, a cloud-platform scope, exp - iat <= 3600) and issues
 *   short-lived tokens, counting mints;
 * - a metadata server answering like Google's (`Metadata-Flavor: Google` required on
 *   the request and sent on the response; 403 without it or with X-Forwarded-For).
 * Both remember every token they issued, so a fake Vertex can check what it receives.
 * Also: a fresh service-account key (RSA 2048, PKCS#8) as Google's JSON key file has it.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import type { Clock } from '../../../src/clock.js';

export interface ServiceAccount {
  /** The JSON key file's text, as stored in Keyward. */
  json: string;
  clientEmail: string;
  privateKeyId: string;
  privateKey: string;
  publicKey: string;
}

export function newServiceAccount(project = 'my-proj-123'): ServiceAccount {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const clientEmail = `keyward-test@${project}.iam.gserviceaccount.com`;
  const privateKeyId = randomBytes(20).toString('hex');
  const json = JSON.stringify({
    type: 'service_account', project_id: project, private_key_id: privateKeyId, private_key: pem, client_email: clientEmail,
    client_id: '123456789012345678901', auth_uri: 'https://accounts.google.com/o/oauth2/auth', token_uri: 'https://oauth2.googleapis.com/token',
  }, null, 2);
  return { json, clientEmail, privateKeyId, privateKey: pem, publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

/** Tokens some fake issued (a fake Vertex accepts exactly these), shared by the token fakes of one test. */
export class IssuedTokens {
  readonly all = new Set<string>();
  issue(prefix: string): string {
    const token = `ya29.${prefix}-${randomBytes(24).toString('base64url')}`;
    this.all.add(token);
    return token;
  }
}

export interface FakeGoogleAuth {
  url: string;
  /** The token endpoint's URL (KEYWARD_GOOGLE_TOKEN_URI). */
  tokenUri: string;
  /** `host:port`, as GCE_METADATA_HOST takes it. */
  metadataHost: string;
  /** Successful mints by the token endpoint, and by the metadata server. */
  mints: number;
  metadataMints: number;
  /** Refusals by the token endpoint, with jose's reason. */
  refusals: string[];
  /** `expires_in` of the next tokens (seconds). */
  expiresIn: number;
  /** Every request the metadata server received (path, headers). */
  metadataRequests: Array<{ url: string; headers: http.IncomingHttpHeaders }>;
  close(): Promise<void>;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString()));
    req.on('error', reject);
  });
}

/** One server holding both `/token` and `/computeMetadata/v1/…`, knowing the service accounts it may verify. */
/** `clock`: the test's wall clock, the one the gateway dates its assertions on (Google reads its own). */
export async function startFakeGoogleAuth(accounts: readonly ServiceAccount[], issued: IssuedTokens, clock?: Clock): Promise<FakeGoogleAuth> {
  const state: FakeGoogleAuth = {
    url: '', tokenUri: '', metadataHost: '', mints: 0, metadataMints: 0, refusals: [], expiresIn: 3599, metadataRequests: [],
    close: async () => {},
  };
  const refuse = (res: http.ServerResponse, why: string): void => {
    state.refusals.push(why);
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_grant', error_description: why }));
  };
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = await readBody(req);
    if (url.pathname.startsWith('/computeMetadata/')) {
      state.metadataRequests.push({ url: req.url ?? '', headers: req.headers });
      if (req.headers['metadata-flavor'] !== 'Google' || req.headers['x-forwarded-for'] !== undefined) {
        res.writeHead(403, { 'content-type': 'text/html' }).end('Missing Metadata-Flavor:Google header.');
        return;
      }
      if (url.pathname === '/computeMetadata/v1/instance/service-accounts/default/token' && req.method === 'GET') {
        state.metadataMints++;
        res.writeHead(200, { 'metadata-flavor': 'Google', 'content-type': 'application/json' })
          .end(JSON.stringify({ access_token: issued.issue('md'), expires_in: state.expiresIn, token_type: 'Bearer' }));
        return;
      }
      res.writeHead(404, { 'metadata-flavor': 'Google' }).end('not found');
      return;
    }
    if (url.pathname !== '/token' || req.method !== 'POST') return void res.writeHead(404).end();
    if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) return refuse(res, 'not a form');
    const form = new URLSearchParams(body);
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return refuse(res, 'grant_type');
    const jwt = form.get('assertion') ?? '';
    try {
      const header = decodeProtectedHeader(jwt);
      const sa = accounts.find((a) => a.privateKeyId === header.kid);
      if (!sa) return refuse(res, 'unknown kid');
      const { payload } = await jwtVerify(jwt, await importSPKI(sa.publicKey, 'RS256'), {
        algorithms: ['RS256'], issuer: sa.clientEmail, audience: state.tokenUri, maxTokenAge: '1h', requiredClaims: ['iat', 'exp', 'scope'], currentDate: new Date(clock?.now() ?? Date.now()),
      });
      if (payload.exp! - payload.iat! > 3600) return refuse(res, 'lifetime over an hour');
      if (!String(payload.scope).split(' ').includes('https://www.googleapis.com/auth/cloud-platform')) return refuse(res, 'scope');
    } catch (err) {
      return refuse(res, (err as { code?: string }).code ?? 'invalid assertion');
    }
    state.mints++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: issued.issue('sa'), expires_in: state.expiresIn, token_type: 'Bearer' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}`;
  state.tokenUri = `${state.url}/token`;
  state.metadataHost = `127.0.0.1:${port}`;
  state.close = () => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return state;
}
