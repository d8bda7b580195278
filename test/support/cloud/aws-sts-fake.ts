/**
 * A fake AWS STS on 127.0.0.1:0 speaking the Query protocol as @aws-sdk/client-sts calls it
 * (form-encoded `Action=AssumeRoleWithWebIdentity`, XML answers, `ErrorResponse` refusals with AWS's
 * codes), that trusts only what an IAM set-up would: the OIDC providers registered (issuer URLs), and
 * per role a trust policy on `aud` and `sub` (StringEquals). It verifies Keyward's JWT the way IAM
 * does (keyward-oidc.ts: discovery and JWKS fetched over HTTP, RS256 signature, iss, aud, exp), then
 * issues temporary credentials and hands them to the fake Bedrock, which verifies SigV4 with them and
 * their session token. It counts calls (one mint for any number of requests) and keeps every JWT it
 * received and every credential it issued (tests grep for them).
 */
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../../src/clock.js';
import type { FakeBedrock } from './bedrock-fake.js';
import { listen, readBody, Refusal, verifyKeywardJwt, type OidcFetchCount } from './keyward-oidc.js';

export interface RoleTrust {
  /** The OIDC provider the role trusts (its issuer URL). */
  issuer: string;
  /** `<issuer host>:sub` StringEquals. */
  subject: string;
  /** `<issuer host>:aud` StringEquals; default sts.amazonaws.com. */
  audience?: string;
}

export interface IssuedAwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiration: Date;
  roleArn: string;
  subject: string;
}

export interface FakeSts {
  url: string;
  /** IAM OIDC providers: issuer URLs whose tokens may be presented at all. */
  providers: Set<string>;
  roles: Map<string, RoleTrust>;
  /** AssumeRoleWithWebIdentity requests received (refused ones included). */
  calls: number;
  issued: IssuedAwsCredentials[];
  /** Every WebIdentityToken received. */
  jwts: string[];
  refusals: string[];
  fetched: OidcFetchCount;
  /** Held before each answer (ms), so concurrent requests overlap one mint. */
  delayMs: number;
  /** While set, every answer waits for it (a test holds a mint open). */
  hold: Promise<void> | undefined;
  /** Session length granted, seconds (the request's DurationSeconds when unset). */
  durationSeconds: number | undefined;
}

const XMLNS = 'https://sts.amazonaws.com/doc/2011-06-15/';
const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export async function startFakeSts(t: ExecutionContext, bedrock: FakeBedrock | undefined, clock?: Clock): Promise<FakeSts> {
  const sts: FakeSts = {
    url: '', providers: new Set(), roles: new Map(), calls: 0, issued: [], jwts: [], refusals: [], fetched: { discovery: 0, jwks: 0 }, delayMs: 0, durationSeconds: undefined, hold: undefined,
  };
  const error = (res: import('node:http').ServerResponse, status: number, code: string, message: string) => {
    sts.refusals.push(`${code}: ${message}`);
    const body = `<ErrorResponse xmlns="${XMLNS}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error><RequestId>${randomBytes(8).toString('hex')}</RequestId></ErrorResponse>`;
    res.writeHead(status, { 'content-type': 'text/xml', 'content-length': Buffer.byteLength(body) }).end(body);
  };
  sts.url = await listen(t, async (req, res) => {
    const form = new URLSearchParams(await readBody(req));
    if (req.method !== 'POST' || form.get('Action') !== 'AssumeRoleWithWebIdentity' || form.get('Version') !== '2011-06-15') {
      return error(res, 400, 'InvalidAction', 'Could not find operation');
    }
    sts.calls++;
    if (sts.delayMs > 0) await new Promise((r) => setTimeout(r, sts.delayMs));
    await sts.hold;
    const jwt = form.get('WebIdentityToken') ?? '';
    const roleArn = form.get('RoleArn') ?? '';
    const session = form.get('RoleSessionName') ?? '';
    sts.jwts.push(jwt);
    if (!/^[\w+=,.@-]{2,64}$/.test(session)) return error(res, 400, 'ValidationError', 'RoleSessionName is invalid');
    let claims;
    try {
      claims = await verifyKeywardJwt(jwt, [...sts.providers], 'sts.amazonaws.com', clock, sts.fetched);
    } catch (err) {
      if (err instanceof Refusal && /expired/i.test(err.message)) return error(res, 400, 'ExpiredTokenException', `Token expired: ${err.message}`);
      return error(res, 400, 'InvalidIdentityToken', `Couldn't verify the web identity token (${(err as Error).message})`);
    }
    const trust = sts.roles.get(roleArn);
    if (!trust || trust.issuer !== claims.iss || claims.sub !== trust.subject || claims.aud !== (trust.audience ?? 'sts.amazonaws.com')) {
      return error(res, 403, 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
    }
    const duration = sts.durationSeconds ?? Number(form.get('DurationSeconds') ?? 3600);
    // AWS dates the expiry on its own wall clock: here the test's (the one the gateway is given), so a mint slowed by a
    // busy machine does not stretch the lifetime the gateway computes past what the test moves its clock by.
    const issued: IssuedAwsCredentials = {
      accessKeyId: `ASIA${randomBytes(8).toString('hex').toUpperCase()}`,
      secretAccessKey: randomBytes(30).toString('base64'),
      sessionToken: `IQoJ${randomBytes(48).toString('base64')}`,
      expiration: new Date((clock?.now() ?? Date.now()) + duration * 1000),
      roleArn,
      subject: String(claims.sub),
    };
    sts.issued.push(issued);
    bedrock?.keys.set(issued.accessKeyId, { secretAccessKey: issued.secretAccessKey, sessionToken: issued.sessionToken });
    const body = `<AssumeRoleWithWebIdentityResponse xmlns="${XMLNS}"><AssumeRoleWithWebIdentityResult>`
      + `<SubjectFromWebIdentityToken>${escapeXml(issued.subject)}</SubjectFromWebIdentityToken><Audience>sts.amazonaws.com</Audience>`
      + `<AssumedRoleUser><Arn>${escapeXml(roleArn.replace(':iam::', ':sts::').replace(':role/', ':assumed-role/'))}/${escapeXml(session)}</Arn><AssumedRoleId>AROAFAKE:${escapeXml(session)}</AssumedRoleId></AssumedRoleUser>`
      + `<Credentials><SessionToken>${escapeXml(issued.sessionToken)}</SessionToken><SecretAccessKey>${escapeXml(issued.secretAccessKey)}</SecretAccessKey>`
      + `<Expiration>${issued.expiration.toISOString()}</Expiration><AccessKeyId>${issued.accessKeyId}</AccessKeyId></Credentials>`
      + `<Provider>${escapeXml(String(claims.iss))}</Provider></AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>${randomBytes(8).toString('hex')}</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`;
    res.writeHead(200, { 'content-type': 'text/xml', 'content-length': Buffer.byteLength(body) }).end(body);
  });
  return sts;
}
