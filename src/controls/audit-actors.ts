/**
 * Who an audit page's actors are, for the people reading it: an admin key's (`akey_…`) or a proxy token's
 * (`tok_…`, revoked ones included) name as it is now, and the person behind a member's token (a personal token,
 * an MCP grant's access token) or a member itself (`usr_…`): the member's id, and its e-mail while it is still a
 * member. Read at listing time (a name is not a secret; a record keeps the id, which never changes), so every
 * entry a token writes (`mcp.tool_call`, a refusal) names its person without the gateway reading anything more.
 * Actors without a name (the organisation token, `cli`, `anonymous`, a workload, an unnamed or deleted key) have
 * none here: readers show the id. Point reads, a few at a time.
 */
import { inject, injectable } from 'tsyringe';
import { isId } from '../ids.js';
import type { AdminKeyStore, PeopleStore, TokenStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';

/** Names are read this many at a time (a page holds at most 100 records, most by a few actors). */
const NAME_READS = 20;

/** What a reader is told of an actor: its name, and the member behind it. */
export interface ActorInfo {
  name?: string;
  member?: { id: string; email: string | null };
}

@injectable()
export class AuditActors {
  constructor(
    @inject(Symbols.AdminKeyStore) private readonly adminKeys: Pick<AdminKeyStore, 'getAdminKey'>,
    @inject(Symbols.TokenStore) private readonly tokens: Pick<TokenStore, 'getToken' | 'getRevokedToken'>,
    @inject(Symbols.PeopleStore) private readonly people: Pick<PeopleStore, 'getMember'>,
  ) {}

  /** actor id → its name, for the named ones among `actors`. */
  async names(orgId: string, actors: Iterable<string>): Promise<Map<string, string>> {
    const named = new Map<string, string>();
    for (const [id, info] of await this.describe(orgId, actors)) if (info.name !== undefined) named.set(id, info.name);
    return named;
  }

  /** actor id → its name and member, for the actors among `actors` that have either. */
  async describe(orgId: string, actors: Iterable<string>): Promise<Map<string, ActorInfo>> {
    const ids = [...new Set(actors)].filter((a) => isId('akey', a) || isId('tok', a) || isId('usr', a));
    const described = new Map<string, ActorInfo>();
    for (let i = 0; i < ids.length; i += NAME_READS) {
      const chunk = ids.slice(i, i + NAME_READS);
      const found = await Promise.all(chunk.map((id) => this.infoOf(orgId, id)));
      chunk.forEach((id, j) => {
        if (found[j]!.name !== undefined || found[j]!.member !== undefined) described.set(id, found[j]!);
      });
    }
    return described;
  }

  private async infoOf(orgId: string, id: string): Promise<ActorInfo> {
    if (isId('akey', id)) {
      const name = (await this.adminKeys.getAdminKey(orgId, id))?.name;
      return name !== undefined ? { name } : {};
    }
    if (isId('usr', id)) return { member: await this.memberOf(orgId, id) };
    const token = (await this.tokens.getToken(orgId, id)) ?? (await this.tokens.getRevokedToken(orgId, id));
    return {
      ...(token?.name !== undefined ? { name: token.name } : {}),
      ...(token?.memberId !== undefined ? { member: await this.memberOf(orgId, token.memberId) } : {}),
    };
  }

  /** The member's id and e-mail (null once it is removed, or when the provider gave none). */
  private async memberOf(orgId: string, memberId: string): Promise<{ id: string; email: string | null }> {
    const member = await this.people.getMember(orgId, memberId);
    return { id: memberId, email: member?.email ?? null };
  }
}
