/**
 * Upstream OAuth connections as the vault keeps them: the tokens a SaaS gave when someone connected an
 * OAuth credential (the refresh token, and the current access token with its dates) sealed like a key,
 * in one envelope bound to the connection (organisation, credential, member, provider): a ciphertext
 * moved to another credential or member never opens. The access token is sealed beside the refresh
 * token so that every instance (and a restart) uses the one just refreshed instead of asking the SaaS
 * again. Nothing here logs or returns a token to a caller: `open` serves the signer alone. A connection
 * changed or removed anywhere (a disconnect) publishes a `credential` change; `generation` counts those per
 * credential, so that every instance's signer lets go of the access token it holds within the feed's second.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { Errors } from '../errors.js';
import { UnwrapFailed } from '../kms/key-wrapper.js';
import type { Logger } from '../log.js';
import type { OAuthConnectionState, OAuthConnectionStore } from '../store/oauth-port.js';
import type { ChangeFeed } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { Envelope, type CredentialRef } from './envelope.js';

/** One connection: whose credential, and for which member ('' the organisation's own). */
export interface ConnectionRef {
  orgId: string;
  credentialId: string;
  provider: string;
  memberId: string;
}

/** What a SaaS's token endpoint gave. Times are epoch ms. */
export interface OAuthTokens {
  accessToken: string;
  /** Absent when the SaaS gave none (then the connection lives as long as its access token). */
  refreshToken?: string;
  issuedAt: number;
  expiresAt: number;
  /**
   * Set while one instance refreshes (`claim`): until when the others wait for its result instead of spending the
   * same refresh token (a SaaS that rotates refresh tokens may take a second use for theft and revoke them all).
   */
  refreshingUntil?: number;
}

/** A connection as the signer reads it: its state, its tokens, and the ciphertext a write must still find. */
export interface OpenedConnection {
  state: OAuthConnectionState;
  tokens: OAuthTokens;
  version: Buffer;
}

/** What the credential's view says about its connection. */
export interface ConnectionSummary {
  state: 'not_connected' | OAuthConnectionState;
  connectedAt?: number;
  updatedAt?: number;
  /** A per-member credential: how many members are connected, and how many must reconnect. */
  members?: Record<OAuthConnectionState, number>;
}

/** The envelope's binding: a connection is its own record, never the credential's (whose id holds no `~`). */
const sealRef = (c: ConnectionRef): CredentialRef => ({ orgId: c.orgId, id: `${c.credentialId}~oauth~${c.memberId === '' ? 'org' : c.memberId}`, provider: c.provider });

function encode(t: OAuthTokens): string {
  return JSON.stringify({ a: t.accessToken, ...(t.refreshToken !== undefined ? { r: t.refreshToken } : {}), i: t.issuedAt, e: t.expiresAt, ...(t.refreshingUntil !== undefined ? { c: t.refreshingUntil } : {}) });
}

function decode(text: string): OAuthTokens {
  const o = JSON.parse(text) as { a?: unknown; r?: unknown; i?: unknown; e?: unknown; c?: unknown };
  if (typeof o.a !== 'string' || typeof o.i !== 'number' || typeof o.e !== 'number' || (o.r !== undefined && typeof o.r !== 'string') || (o.c !== undefined && typeof o.c !== 'number')) throw new UnwrapFailed();
  return { accessToken: o.a, ...(typeof o.r === 'string' ? { refreshToken: o.r } : {}), issuedAt: o.i, expiresAt: o.e, ...(typeof o.c === 'number' ? { refreshingUntil: o.c } : {}) };
}

/** The tokens without a refresh claim. */
const unclaimed = ({ refreshingUntil: _, ...tokens }: OAuthTokens): OAuthTokens => tokens;

@injectable()
export class OAuthConnections {
  constructor(
    @inject(Symbols.OAuthConnectionStore) private readonly store: OAuthConnectionStore,
    @inject(Envelope) private readonly envelope: Envelope,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(Symbols.ChangeFeed) feed: ChangeFeed,
  ) {
    feed.watch((c) => {
      if (c.kind === 'credential') this.generations.set(c.id, this.generation(c.id) + 1);
    });
  }

  /** Credential id → how many changes were heard of it (one entry per credential that changed while this process ran). */
  private readonly generations = new Map<string, number>();

  /** How many changes of the credential this instance has heard of: the signer's cached access token is for one generation. */
  generation(credentialId: string): number {
    return this.generations.get(credentialId) ?? 0;
  }

  /** A connect (or reconnect): the tokens sealed, the state `connected`. */
  async connect(ref: ConnectionRef, tokens: OAuthTokens, by: string): Promise<void> {
    const sealed = await this.envelope.seal(sealRef(ref), encode(tokens));
    const now = this.clock.now();
    await this.store.putOAuthConnection({ orgId: ref.orgId, credentialId: ref.credentialId, memberId: ref.memberId, state: 'connected', ...sealed, connectedBy: by, connectedAt: now, updatedAt: now });
  }

  /** The connection's tokens, or undefined (never connected). Fails closed: one that does not open is 503, never used. */
  async open(ref: ConnectionRef): Promise<OpenedConnection | undefined> {
    const record = await this.store.getOAuthConnection(ref.orgId, ref.credentialId, ref.memberId);
    if (!record) return undefined;
    try {
      return { state: record.state, tokens: decode(await this.envelope.open(sealRef(ref), record)), version: record.ciphertext };
    } catch (err) {
      if (!(err instanceof UnwrapFailed) && !(err instanceof SyntaxError)) throw err;
      this.log.error({ credential: ref.credentialId, org: ref.orgId }, 'an upstream OAuth connection failed its integrity check; refusing to use it');
      throw Errors.unavailable();
    }
  }

  /** A refresh's result, stored only over `version` (what `open` or `claim` read); false: another instance wrote first. */
  async refreshed(ref: ConnectionRef, version: Buffer, tokens: OAuthTokens): Promise<boolean> {
    return (await this.replace(ref, version, unclaimed(tokens))) !== undefined;
  }

  /**
   * Claims the refresh of `tokens` (what `open` read at `version`) until `until`: the same tokens, sealed again with
   * the claim, only over `version`. The new version, which the claimant's `refreshed`, `refused` or `release` must
   * find; undefined when another instance wrote first (read again).
   */
  claim(ref: ConnectionRef, version: Buffer, tokens: OAuthTokens, until: number): Promise<Buffer | undefined> {
    return this.replace(ref, version, { ...tokens, refreshingUntil: until });
  }

  /** Gives a claim up (the SaaS could not be asked): the tokens as they were, unclaimed, only over the claim's `version`. */
  async release(ref: ConnectionRef, version: Buffer, tokens: OAuthTokens): Promise<void> {
    await this.replace(ref, version, unclaimed(tokens));
  }

  private async replace(ref: ConnectionRef, version: Buffer, tokens: OAuthTokens): Promise<Buffer | undefined> {
    const sealed = await this.envelope.seal(sealRef(ref), encode(tokens));
    return (await this.store.replaceOAuthTokens(ref.orgId, ref.credentialId, ref.memberId, version, sealed, this.clock.now())) ? sealed.ciphertext : undefined;
  }

  /** The SaaS refused the refresh token: the connection must be made again by a person. */
  async refused(ref: ConnectionRef, version: Buffer): Promise<void> {
    await this.store.markOAuthReconnect(ref.orgId, ref.credentialId, ref.memberId, version, this.clock.now());
  }

  /** The view's summary: the organisation's connection, or (per member) the member's own and the counts. */
  async summary(orgId: string, credentialId: string, perMember: boolean, memberId?: string): Promise<ConnectionSummary> {
    const counts = perMember ? await this.store.countOAuthConnections(orgId, credentialId) : undefined;
    const own = perMember && memberId === undefined ? undefined : await this.store.getOAuthConnection(orgId, credentialId, perMember ? memberId! : '');
    return {
      state: own?.state ?? 'not_connected',
      ...(own ? { connectedAt: own.connectedAt, updatedAt: own.updatedAt } : {}),
      ...(counts ? { members: counts } : {}),
    };
  }

  /** Forgets the credential's connections (all, or one member's); how many. */
  disconnect(orgId: string, credentialId: string, memberId?: string): Promise<number> {
    return this.store.deleteOAuthConnections(orgId, credentialId, memberId);
  }
}
