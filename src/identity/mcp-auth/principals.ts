/**
 * Who consents on Keyward's authorization page, as an interface a sign-in method implements: an org token or
 * admin key pasted into the page's form today (OrgKeySignIn); a member's single sign-on session plugs in through
 * `current` (a session cookie) without the authorization code changing. A grant and every token from it record
 * the principal's id (a member's `usr_…`, else the `otk_`/`akey_` id), and end no later than the principal does;
 * McpAuthorization.revokePrincipal ends them all at once (a member removed).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError } from '../../errors.js';
import type { OrgService } from '../../vault/org-service.js';

export interface ConsentPrincipal {
  /** A member's `usr_…` id, else the org token's `otk_…` or the admin key's `akey_…` id. */
  id: string;
  orgId: string;
  /** When the principal's own authority ends (null: not before it is removed). */
  expiresAt: number | null;
  /** A minter limited to these credentials. */
  credentialIds?: readonly string[];
  /** Who consents, in words for the consent page (a member's email or name); absent for a pasted key. */
  shownAs?: string;
}

/** Why a sign-in was refused, in words for the page (never the presented value). */
export class SignInRefusal extends Error {}

export interface ConsentSignIn {
  /** Who is signed in already (a member's session), if anyone: the page then asks for no token. */
  current(headers: IncomingHttpHeaders): Promise<ConsentPrincipal | undefined>;
  /** Who the sign-in form names, or a SignInRefusal. */
  fromForm(fields: Readonly<Record<string, string>>): Promise<ConsentPrincipal>;
}

/** Roles that may give an agent a token: those that may mint one (a viewer may not). */
const MAY_MINT = new Set(['owner', 'admin', 'minter']);

/** The org token or an admin key, pasted as the console takes them (`token` field). */
export class OrgKeySignIn implements ConsentSignIn {
  constructor(private readonly orgs: Pick<OrgService, 'authenticate'>) {}

  async current(): Promise<ConsentPrincipal | undefined> {
    return undefined;
  }

  async fromForm(fields: Readonly<Record<string, string>>): Promise<ConsentPrincipal> {
    const token = (fields.token ?? '').trim();
    let found;
    try {
      found = await this.orgs.authenticate(`Bearer ${token}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) throw new SignInRefusal('That is not a valid organisation token or admin key.');
      throw err;
    }
    if (!MAY_MINT.has(found.role)) throw new SignInRefusal(`A ${found.role} key may not give an agent a token: sign in with the organisation token or an admin or minter key.`);
    return { id: found.tokenId, orgId: found.org.id, expiresAt: found.expiresAt, ...(found.credentialIds ? { credentialIds: found.credentialIds } : {}) };
  }
}
