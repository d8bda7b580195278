/**
 * The `sigv4` signer (AWS Signature Version 4, e.g. Bedrock): options `{ service }`;
 * the region is the credential's `region` field. A credential with `api_key` goes
 * as `Authorization: Bearer <api_key>` (a Bedrock API key); one with the key pair,
 * or a federated one (its temporary credentials from STS AssumeRoleWithWebIdentity,
 * aws-web-identity.ts, cached and refreshed in the background, and masked in
 * responses), is signed per request with @smithy/signature-v4 over the final request: the
 * path exactly as sent (escaped once more for the canonical URI, as AWS does for
 * every service but S3), the query, `host`, `content-type` and `content-length`,
 * and the SHA-256 of the exact body bytes (hence needsBody), with the session
 * token when there is one. First every header the caller's own AWS client set is
 * removed (its Authorization/signature, `x-amz-*`, `amz-sdk-*`): none of it is
 * ever forwarded.
 */
import { isFederated, type CredentialSecrets, type OutgoingRequest, type Signer } from '../../../catalog/provider.js';
import type { Logger } from '../../../log.js';
import { mintFromAwsSts, type AwsTemporaryCredentials } from './aws-web-identity.js';
import type { FederationSettings } from './federation.js';
import { CredentialTokens } from './minted-cache.js';

/**
 * The AWS libraries, loaded on the first request signed with a key pair: a deployment that never signs for
 * AWS does not pay their import at start-up (about 30 ms of a cold start).
 */
let awsLibraries: Promise<[typeof import('@smithy/signature-v4'), typeof import('@aws-crypto/sha256-js')]> | undefined;
const loadAws = () => (awsLibraries ??= Promise.all([import('@smithy/signature-v4'), import('@aws-crypto/sha256-js')]));

/** What AWS clients add to a request that must never reach upstream as the caller's. */
export const isCallerAwsHeader = (name: string): boolean => name === 'authorization' || name.startsWith('x-amz-') || name.startsWith('amz-sdk-');

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(',') : v);

function queryObject(query: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(query)) {
    const had = out[k];
    out[k] = had === undefined ? v : [...(Array.isArray(had) ? had : [had]), v];
  }
  return out;
}

interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
}

export function sigv4Signer(options: Readonly<Record<string, unknown>>, federation?: FederationSettings, log?: Logger): Signer {
  const service = options.service;
  if (typeof service !== 'string' || !/^[a-z0-9-]{1,64}$/.test(service)) throw new Error('`service` must name the AWS service, e.g. "bedrock"');
  // A federated credential's temporary credentials, one set per credential and role.
  const temporary = new CredentialTokens<AwsTemporaryCredentials>({
    now: () => federation?.clock.now() ?? Date.now(),
    log,
    what: 'AWS temporary credentials',
    identity: (c) => `${c.owner?.orgId} ${c.owner?.credentialId} ${c.plain.role_arn} ${c.plain.region}`,
    mint: (c) => mintFromAwsSts(federation!, c),
    masksOf: (t) => [t.accessKeyId, t.secretAccessKey, t.sessionToken],
  });
  return {
    needsBody: true,
    sign(request: OutgoingRequest, credential: CredentialSecrets): Promise<void> {
      for (const name of Object.keys(request.headers)) if (isCallerAwsHeader(name)) delete request.headers[name];
      const { secrets } = credential;
      if (secrets.api_key !== undefined) {
        request.headers.authorization = `Bearer ${secrets.api_key}`;
        return Promise.resolve();
      }
      if (!isFederated(credential)) {
        return signV4(service, request, credential, {
          accessKeyId: secrets.aws_access_key_id!, secretAccessKey: secrets.aws_secret_access_key!, sessionToken: secrets.aws_session_token,
        });
      }
      const minted = temporary.get(credential);
      return minted instanceof Promise ? minted.then((t) => signV4(service, request, credential, t)) : signV4(service, request, credential, minted);
    },
    masks: (credential) => (isFederated(credential) ? temporary.masks(credential) : []),
  };
}

/** SigV4 over the final request with `aws`'s credentials (the session token signed with them when there is one). */
async function signV4(service: string, request: OutgoingRequest, credential: CredentialSecrets, aws: AwsCredentials): Promise<void> {
  const region = credential.plain.region!;
  const body = request.body ?? Buffer.alloc(0);
  // Only what the gateway controls is signed: these values reach AWS exactly as given here.
  const headers: Record<string, string> = { host: single(request.headers.host)!, 'content-length': String(body.length) };
  const type = single(request.headers['content-type']);
  if (type !== undefined) headers['content-type'] = type;
  const [{ SignatureV4 }, { Sha256 }] = await loadAws();
  const signer = new SignatureV4({
    service,
    region,
    sha256: Sha256,
    credentials: {
      accessKeyId: aws.accessKeyId,
      secretAccessKey: aws.secretAccessKey,
      ...(aws.sessionToken !== undefined ? { sessionToken: aws.sessionToken } : {}),
    },
    uriEscapePath: true,
    applyChecksum: true,
  });
  const url = new URL(request.origin);
  const signed = await signer.sign({
    method: request.method,
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    path: request.path,
    query: queryObject(request.query),
    headers,
    body,
  });
  for (const [name, value] of Object.entries(signed.headers)) request.headers[name.toLowerCase()] = value;
}
