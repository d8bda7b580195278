/**
 * People as principals (the store's side): an organisation's single sign-on configuration (its client
 * secret sealed like a provider key: vault/envelope.ts, bound to the organisation's record), its members
 * (`usr_…`, one per issuer and subject, made at first sign-in) and their sessions. A session is stored
 * by the SHA-256 of its value only, never the value; a member's deletion removes its sessions in the
 * same call. Nothing caches a session or a member (each admin request reads them), so a deletion is
 * refused at once on every instance; a member's personal tokens are revoked through the token store
 * (its revocations reach every instance's token cache through the change feed).
 */
import type { BAD_CURSOR, Page, PageQuery } from './paging.js';

/** What a member's groups can make it: the admin key roles, or `member` (its own session and personal tokens, and GET /v1/orgs/self). */
export type MemberRole = 'admin' | 'minter' | 'viewer' | 'member';
export const MEMBER_ROLES: readonly MemberRole[] = ['admin', 'minter', 'viewer', 'member'];

/** The client secret as envelope encryption seals it (the same fields as ports.ts's SealedKey). */
export interface SealedClientSecret {
  wrappedDek: Buffer;
  kekId: string;
  nonce: Buffer;
  ciphertext: Buffer;
}

export interface SsoConfigRecord extends SealedClientSecret {
  orgId: string;
  issuer: string;
  clientId: string;
  /** E-mail domains a member's `email` must be at (lower case); empty: any. */
  allowedDomains: string[];
  /** The ID token claim that lists the member's groups; null: none (every member gets `member`). */
  groupsClaim: string | null;
  /** Group → role; a member takes the highest role among its groups, `member` when none matches. */
  roleMap: Record<string, MemberRole>;
  /** The last four characters of the client secret (what the API shows of it). */
  secretHint: string;
  updatedAt: number;
}

export interface MemberRecord {
  id: string;
  orgId: string;
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
  role: MemberRole;
  /** The identity provider's groups at the last sign-in (what a team's `groups` match); absent in records made before they were kept. */
  groups?: string[];
  /** The member's monthly budget in micro-dollars (null: none). */
  budgetMicros: number | null;
  createdAt: number;
  lastSignInAt: number;
}

/** `browser`: the console's cookie; `cli`: a bearer session of `keyward login`; `refresh`: what renews a `cli` session (rotated at each use). */
export type SessionKind = 'browser' | 'cli' | 'refresh';

export interface SessionRecord {
  /** SHA-256 (hex) of the session's value: the value itself is never stored. */
  hash: string;
  orgId: string;
  memberId: string;
  kind: SessionKind;
  createdAt: number;
  expiresAt: number;
}

export interface PeopleStore {
  /** Stores (or replaces) the organisation's single sign-on configuration. */
  putSsoConfig(record: SsoConfigRecord): Promise<void>;
  getSsoConfig(orgId: string): Promise<SsoConfigRecord | undefined>;
  /**
   * A sign-in: the member of (`orgId`, `issuer`, `subject`) updated with the given email, name, role and
   * lastSignInAt, or `member` stored as the new one when there is none (one per issuer and subject, on every instance).
   */
  signInMember(member: MemberRecord): Promise<MemberRecord>;
  getMember(orgId: string, id: string): Promise<MemberRecord | undefined>;
  /** Newest first. */
  listMembers(orgId: string, page: PageQuery): Promise<Page<MemberRecord> | typeof BAD_CURSOR>;
  /** Sets (null: clears) its monthly budget; false: no such member of this organisation. */
  setMemberBudget(orgId: string, id: string, micros: number | null): Promise<boolean>;
  /** Deletes the member and every session of it; true once. */
  deleteMember(orgId: string, id: string): Promise<boolean>;
  createSession(record: SessionRecord): Promise<void>;
  findSession(hash: string): Promise<SessionRecord | undefined>;
  /** True once (of two deleters of one session, one wins: a refresh is used once). */
  deleteSession(hash: string): Promise<boolean>;
  /** The ids of the live proxy tokens bound to this member (its personal tokens). */
  memberTokenIds(orgId: string, memberId: string): Promise<string[]>;
}
