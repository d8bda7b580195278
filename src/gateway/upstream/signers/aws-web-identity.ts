/**
 * AWS temporary credentials for a federated Bedrock credential: STS AssumeRoleWithWebIdentity of the
 * credential's `role_arn` with Keyward's JWT (`aud` sts.amazonaws.com), through @aws-sdk/client-sts
 * (loaded on the first federated mint), at AWS_ENDPOINT_URL_STS or STS's regional endpoint for the
 * credential's region. One hour; the session is named `keyward-<credential id>`, so CloudTrail says
 * which credential acted. A refusal (AccessDenied, InvalidIdentityToken, ExpiredToken…) is 502
 * upstream_auth_failed with STS's words, masked; an STS that could not be reached is unreachable.
 */
import type { CredentialSecrets } from '../../../catalog/provider.js';
import type { STSClient } from '@aws-sdk/client-sts';
import { identityToken, type FederationSettings } from './federation.js';
import type { Minted } from './minted-cache.js';
import { cloudWords, TokenMintError } from './token-fetch.js';

export const STS_AUDIENCE = 'sts.amazonaws.com';
const SESSION_SECONDS = 3600;

export interface AwsTemporaryCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
}

let library: Promise<typeof import('@aws-sdk/client-sts')> | undefined;
const loadSts = () => (library ??= import('@aws-sdk/client-sts'));

/** One client per region and endpoint (they hold no identity: AssumeRoleWithWebIdentity is an unsigned call). */
const clients = new Map<string, STSClient>();

async function stsClient(region: string, endpoint: string | undefined): Promise<STSClient> {
  const key = `${region} ${endpoint ?? ''}`;
  let client = clients.get(key);
  if (!client) {
    const { STSClient } = await loadSts();
    client = new STSClient({
      region,
      ...(endpoint !== undefined ? { endpoint } : {}),
      maxAttempts: 2,
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 10_000 },
    });
    clients.set(key, client);
  }
  return client;
}

const PRINTABLE = /^[\x21-\x7e]{1,8192}$/;

export async function mintFromAwsSts(settings: FederationSettings, credential: CredentialSecrets): Promise<Minted<AwsTemporaryCredentials>> {
  const jwt = await identityToken(settings, credential, STS_AUDIENCE);
  const { AssumeRoleWithWebIdentityCommand } = await loadSts();
  const client = await stsClient(credential.plain.region!, settings.awsStsEndpoint);
  // STS dates Expiration on the wall clock: this mint's start is read on the same (injected) one.
  const startedWall = settings.clock.now();
  let out;
  try {
    out = await client.send(new AssumeRoleWithWebIdentityCommand({
      RoleArn: credential.plain.role_arn!,
      RoleSessionName: `keyward-${credential.owner?.credentialId ?? 'credential'}`.slice(0, 64),
      WebIdentityToken: jwt,
      DurationSeconds: SESSION_SECONDS,
    }));
  } catch (err) {
    const e = err as { name?: unknown; message?: unknown; $metadata?: { httpStatusCode?: unknown } };
    const words = `${String(e?.name ?? 'Error')}: ${String(e?.message ?? '')}`;
    // An HTTP answer from STS is its refusal; none is a network failure.
    if (typeof e?.$metadata?.httpStatusCode === 'number') throw new TokenMintError(`AWS STS refused AssumeRoleWithWebIdentity: ${cloudWords(words, [jwt])}`, true);
    throw new TokenMintError(`AWS STS could not be reached (${cloudWords(words, [jwt])})`);
  }
  const c = out.Credentials;
  if (!c || !PRINTABLE.test(c.AccessKeyId ?? '') || !PRINTABLE.test(c.SecretAccessKey ?? '') || !PRINTABLE.test(c.SessionToken ?? '') || !(c.Expiration instanceof Date)) {
    throw new TokenMintError('AWS STS answered without usable credentials');
  }
  return {
    value: Object.freeze({ accessKeyId: c.AccessKeyId!, secretAccessKey: c.SecretAccessKey!, sessionToken: c.SessionToken! }),
    // STS dates the expiry absolutely: the lifetime counts from when this mint began.
    lifetimeMs: c.Expiration.getTime() - startedWall,
  };
}
