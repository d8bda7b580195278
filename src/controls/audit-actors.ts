/**
 * The names of an audit page's actors, for the people reading it: an admin key's (`akey_…`) or a proxy token's
 * (`tok_…`, revoked ones included) name as it is now, read at listing time (a name is not a secret; a record keeps
 * the id, which never changes). Actors without a name (the organisation token, `cli`, `anonymous`, a workload,
 * an unnamed or deleted key) have none here: readers show the id. Point reads, a few at a time.
 */
import { inject, injectable } from 'tsyringe';
import { isId } from '../ids.js';
import type { AdminKeyStore, TokenStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';

/** Names are read this many at a time (a page holds at most 100 records, most by a few actors). */
const NAME_READS = 20;

@injectable()
export class AuditActors {
  constructor(
    @inject(Symbols.AdminKeyStore) private readonly adminKeys: Pick<AdminKeyStore, 'getAdminKey'>,
    @inject(Symbols.TokenStore) private readonly tokens: Pick<TokenStore, 'getToken' | 'getRevokedToken'>,
  ) {}

  /** actor id → its name, for the named ones among `actors`. */
  async names(orgId: string, actors: Iterable<string>): Promise<Map<string, string>> {
    const ids = [...new Set(actors)].filter((a) => isId('akey', a) || isId('tok', a));
    const names = new Map<string, string>();
    for (let i = 0; i < ids.length; i += NAME_READS) {
      const chunk = ids.slice(i, i + NAME_READS);
      const found = await Promise.all(chunk.map((id) => this.nameOf(orgId, id)));
      chunk.forEach((id, j) => {
        if (found[j] !== undefined) names.set(id, found[j]);
      });
    }
    return names;
  }

  private async nameOf(orgId: string, id: string): Promise<string | undefined> {
    if (isId('akey', id)) return (await this.adminKeys.getAdminKey(orgId, id))?.name;
    const live = await this.tokens.getToken(orgId, id);
    return live ? live.name : (await this.tokens.getRevokedToken(orgId, id))?.name;
  }
}
