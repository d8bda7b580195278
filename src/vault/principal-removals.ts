/**
 * Who is told when a principal that may have consented to MCP access is removed: a member (DELETE
 * /v1/members/:id) or an admin key (DELETE /v1/admin-keys/:id). MCP authorization subscribes when it is on
 * (boot/mcp-auth.ts) and revokes every grant the principal gave and every access and refresh token from them,
 * before the removal answers. Without a subscriber (MCP authorization off) a removal has nothing more to end.
 */
import { injectable } from 'tsyringe';

/** Ends what the principal (`usr_…` or `akey_…`) authorised; `by` is the audit actor. */
export type RemovalListener = (principalId: string, by: string) => Promise<unknown>;

@injectable()
export class PrincipalRemovals {
  private readonly listeners: RemovalListener[] = [];

  subscribe(listener: RemovalListener): void {
    this.listeners.push(listener);
  }

  /** Runs every listener; the first failure is thrown once all have run (the caller's request then fails, and a retry repeats them). */
  async removed(principalId: string, by: string): Promise<void> {
    const results = await Promise.allSettled(this.listeners.map((l) => l(principalId, by)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}
