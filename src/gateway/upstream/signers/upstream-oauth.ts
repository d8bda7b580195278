/**
 * The upstream OAuth signer: `Authorization: Bearer <access token>` for a credential of `kind: oauth`
 * (vault/oauth-credential.ts), the token being the one its connection holds (vault/oauth-connections.ts).
 * Access tokens are kept in memory per connection (MintedCache: one refresh in flight per connection
 * whoever asks, handed out synchronously while fresh), refreshed at the later of 5 minutes before expiry
 * or half their life, and never sent within a minute or a tenth of their life of expiry, whichever is
 * shorter. A change of the credential heard from any instance (a disconnect) ends what is held here. A
 * refresh first reads the vault: a token another instance refreshed (or the one sealed at connect) is used as
 * it is while it is not due; else this instance claims the refresh in the vault (compare-and-set on what it
 * read, for 30 s: the others read the vault again until its result is there, so a refresh token is never spent
 * twice), the refresh grant runs and its result (a rotated refresh token included) is sealed back. A refresh
 * token the SaaS refuses (`invalid_grant`) marks the connection `reconnect` and answers 502 upstream_auth_failed
 * saying a person must connect the account again; a SaaS that cannot be asked is 502 upstream_unreachable and
 * changes nothing. Tokens are never logged; the recent access tokens are masked in responses.
 */
import type { CredentialSecrets, OutgoingRequest, Signer } from '../../../catalog/provider.js';
import { systemTimers, type Clock, type Timers } from '../../../clock.js';
import type { Logger } from '../../../log.js';
import { oauthClient, OAuthGrantError, refreshGrant } from '../../../vault/oauth-client.js';
import type { ConnectionRef, OAuthConnections, OAuthTokens } from '../../../vault/oauth-connections.js';
import { oauthSettings } from '../../../vault/oauth-credential.js';
import { CredentialTokens, REFRESH_BEFORE_MS, SEND_MARGIN_MS, type Minted } from './minted-cache.js';
import { TokenMintError } from './token-fetch.js';

export interface UpstreamOAuthSettings {
  connections: Pick<OAuthConnections, 'open' | 'claim' | 'refreshed' | 'refused' | 'release' | 'generation'>;
  /** KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: loopback http token endpoints (tests). */
  allowHttpLoopback: boolean;
  /** The injected timers the wait for another instance's refresh runs on (real ones when absent). */
  timers?: Timers;
}

/** How long a refresh claim holds (by the clock): past it, a claimant that died is taken over. */
export const CLAIM_MS = 30_000;
/** While another instance's claim holds: how often, and how many times, the vault is read again for its result. */
const CLAIM_POLL_MS = 200;
const CLAIM_POLLS = 75;

/** A minute, or a tenth of the token's life when that is shorter. */
export const oauthSendMargin = (lifetimeMs: number): number => Math.min(SEND_MARGIN_MS, lifetimeMs / 10);
/** When a token is due for refresh: 5 minutes before expiry, or half-way through a short life. */
export const refreshPoint = (t: Pick<OAuthTokens, 'issuedAt' | 'expiresAt'>): number => Math.max(t.expiresAt - REFRESH_BEFORE_MS, t.issuedAt + (t.expiresAt - t.issuedAt) / 2);

export interface UpstreamOAuthSigner extends Signer {
  /** Refreshes asked of the SaaS or read from the vault so far (tests count them). */
  readonly mints: number;
}

function connectionOf(c: CredentialSecrets, provider: string): ConnectionRef {
  const owner = c.owner;
  if (!owner) throw new TokenMintError('the credential has no owner', true);
  const s = oauthSettings(c);
  if (s.perMember && owner.memberId === undefined) {
    throw new TokenMintError('This credential connects each member\'s own account, and this request is not bound to a member: use a personal token of a signed-in member.', true);
  }
  return { orgId: owner.orgId, credentialId: owner.credentialId, provider, memberId: s.perMember ? owner.memberId! : '' };
}

const reconnect = (c: CredentialSecrets, why: string): TokenMintError => new TokenMintError(
  `${why} The upstream account of credential ${c.owner?.credentialId ?? ''} must be reconnected: an admin (or, for a per-member credential, the member) connects it again from the console (Credentials, Reconnect).`, true,
);

export function upstreamOAuthSigner(provider: string, settings: UpstreamOAuthSettings, log: Logger | undefined, clock: Clock | undefined): UpstreamOAuthSigner {
  const now = (): number => clock?.now() ?? Date.now();
  const clients = new WeakMap<CredentialSecrets, ReturnType<typeof oauthClient>>();
  const clientOf = (c: CredentialSecrets) => {
    let client = clients.get(c);
    if (!client) clients.set(c, (client = oauthClient(oauthSettings(c), settings.allowHttpLoopback)));
    return client;
  };

  const mint = async (c: CredentialSecrets): Promise<Minted<string>> => {
    const ref = connectionOf(c, provider);
    for (let polls = 0; ; polls++) {
      if (polls > CLAIM_POLLS) throw new TokenMintError('Another instance is refreshing this connection\'s access token and has not finished; try again.', false);
      const opened = await settings.connections.open(ref);
      if (!opened) throw new TokenMintError('This OAuth credential is not connected yet: an admin connects it from the console (Credentials, Connect).', true);
      if (opened.state === 'reconnect') throw reconnect(c, 'The SaaS refused this connection\'s refresh token.');
      const stored = opened.tokens;
      const at = now();
      // Another instance refreshed it (or it was just connected): used as it is until it is due.
      if (at < refreshPoint(stored)) return { value: stored.accessToken, lifetimeMs: stored.expiresAt - stored.issuedAt, issuedAt: stored.issuedAt };
      if (stored.refreshToken === undefined) {
        if (at < stored.expiresAt - oauthSendMargin(stored.expiresAt - stored.issuedAt)) return { value: stored.accessToken, lifetimeMs: stored.expiresAt - stored.issuedAt, issuedAt: stored.issuedAt };
        throw reconnect(c, 'The SaaS gave no refresh token and the access token has expired.');
      }
      // Another instance is refreshing it: its result is awaited, never the same refresh token spent twice.
      if (stored.refreshingUntil !== undefined && at < stored.refreshingUntil) {
        await new Promise<void>((resolve) => (settings.timers ?? systemTimers).after(CLAIM_POLL_MS, resolve));
        continue;
      }
      const claimed = await settings.connections.claim(ref, opened.version, stored, at + CLAIM_MS);
      if (!claimed) continue; // another instance wrote first: read again
      return refresh(c, ref, claimed, stored, at);
    }
  };

  /** The refresh grant under this instance's claim (`version`): its result sealed back for every instance. */
  const refresh = async (c: CredentialSecrets, ref: ConnectionRef, version: Buffer, stored: OAuthTokens, at: number): Promise<Minted<string>> => {
    let granted;
    try {
      granted = await refreshGrant(clientOf(c), oauthSettings(c), stored.refreshToken!);
    } catch (err) {
      if (err instanceof OAuthGrantError && err.refusedWith === 'invalid_grant') {
        await settings.connections.refused(ref, version);
        throw reconnect(c, `${err.message}.`);
      }
      // The SaaS could not be asked, or refused the client itself (a rotated client secret): nothing a reconnect
      // fixes; the claim is given up so that the next try (here or elsewhere) need not wait it out.
      await settings.connections.release(ref, version, stored).catch(() => undefined);
      if (!(err instanceof OAuthGrantError)) throw err;
      throw new TokenMintError(err.message, err.refusedWith !== undefined);
    }
    const tokens: OAuthTokens = { accessToken: granted.accessToken, refreshToken: granted.refreshToken ?? stored.refreshToken, issuedAt: at, expiresAt: at + granted.lifetimeMs };
    // Sealed back for every instance over this instance's claim.
    await settings.connections.refreshed(ref, version, tokens);
    return { value: tokens.accessToken, lifetimeMs: granted.lifetimeMs, issuedAt: at };
  };

  const tokens = new CredentialTokens<string>({
    now,
    log,
    what: 'an upstream OAuth access token',
    // With the credential's generation: once a change of it is heard (a disconnect on any instance), the credential's
    // secrets are read again (a new object), and its access token is looked up afresh in the vault, not served from here.
    identity: (c) => `oauth ${c.owner?.orgId} ${c.owner?.credentialId} ${c.owner?.memberId ?? ''} ${settings.connections.generation(c.owner?.credentialId ?? '')}`,
    mint,
    masksOf: (token) => [token],
    sendMargin: oauthSendMargin,
  });

  return {
    needsBody: false,
    sign(request: OutgoingRequest, credential: CredentialSecrets): void | Promise<void> {
      return tokens.bearer(request, credential);
    },
    masks: (credential) => tokens.masks(credential),
    get mints() {
      return tokens.mints;
    },
  };
}
