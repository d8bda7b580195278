/**
 * The process-wide ceiling on request-body bytes held in memory while a scan
 * decides them (KEYWARD_BUFFER_BUDGET). Requests take bytes as they hold them
 * and give them back as they are forwarded or dropped; a take that would pass
 * the ceiling is refused, so the sum never passes it, however many requests.
 * Each holder (a proxy token) may hold at most its share of it
 * (KEYWARD_BUFFER_PER_TOKEN) at once, across all its requests, and all the
 * tokens of one organisation together at most the organisation's share
 * (KEYWARD_BUFFER_PER_ORG): one token trickling bodies, or one organisation's
 * many tokens, cannot take the budget every other organisation needs.
 *
 * Given-back bytes are garbage, and V8 collects Buffer memory lazily (it lets
 * tens of megabytes of it pile up before collecting), so the process would
 * hold up to the budget again in garbage on top of the budget itself. Once
 * an eighth of the budget (1 to 16 MiB) has been given back, the budget asks
 * for one collection: rare under ordinary traffic (scanned bodies hold a few
 * kilobytes), and it keeps the process's memory near what is really held.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

type Collect = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async' }) => void | Promise<void>;

let collector: Collect | null | undefined;

/** V8's collector, exposed once (as jest-leak-detector does); null where the runtime refuses it. */
function collect(): Collect | null {
  if (collector !== undefined) return collector;
  try {
    if (typeof globalThis.gc === 'function') collector = globalThis.gc as Collect;
    else {
      v8.setFlagsFromString('--expose-gc');
      collector = vm.runInNewContext('gc') as Collect;
    }
  } catch {
    collector = null;
  }
  return collector;
}

const MIB = 1024 * 1024;

/** Whose shares a take counts against: the proxy token's id and its organisation's. */
export interface BufferHolder {
  readonly token: string;
  readonly org: string;
}

/** Adds `bytes` to `key`'s count in `counts` (removing it at zero). */
function adjust(counts: Map<string, number>, key: string, bytes: number): void {
  const left = (counts.get(key) ?? 0) + bytes;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

export class BufferBudget {
  private heldBytes = 0;
  private givenBack = 0;
  private collecting = false;
  private readonly collectEvery: number;
  /** Bytes held per token, while it holds any. */
  private readonly tokens = new Map<string, number>();
  /** Bytes held per organisation, while any of its tokens holds any. */
  private readonly orgs = new Map<string, number>();

  /** `perHolder`: the most one token may hold at once; `perOrg`: the most one organisation's tokens may hold together (defaults: the whole limit). */
  constructor(readonly limit: number, readonly perHolder: number = limit, readonly perOrg: number = limit) {
    this.collectEvery = Math.min(16 * MIB, Math.max(MIB, Math.floor(limit / 8)));
  }

  /** Bytes held by all requests right now. */
  get held(): number {
    return this.heldBytes;
  }

  /** Bytes the token `tokenId` holds right now. */
  heldBy(tokenId: string): number {
    return this.tokens.get(tokenId) ?? 0;
  }

  /** Bytes the tokens of organisation `orgId` hold together right now. */
  heldByOrg(orgId: string): number {
    return this.orgs.get(orgId) ?? 0;
  }

  /** Takes `bytes` (for `holder`, when named); false (and nothing taken) when that would pass the limit, the token's share or its organisation's. */
  take(bytes: number, holder?: BufferHolder): boolean {
    if (this.heldBytes + bytes > this.limit) return false;
    if (holder !== undefined) {
      if (this.heldBy(holder.token) + bytes > this.perHolder) return false;
      if (this.heldByOrg(holder.org) + bytes > this.perOrg) return false;
      adjust(this.tokens, holder.token, bytes);
      adjust(this.orgs, holder.org, bytes);
    }
    this.heldBytes += bytes;
    return true;
  }

  /** Gives back `bytes` taken (for the same `holder`). */
  release(bytes: number, holder?: BufferHolder): void {
    if (bytes === 0) return;
    if (holder !== undefined) {
      adjust(this.tokens, holder.token, -bytes);
      adjust(this.orgs, holder.org, -bytes);
    }
    this.heldBytes -= bytes;
    this.givenBack += bytes;
    if (this.givenBack >= this.collectEvery && !this.collecting) {
      this.givenBack = 0;
      this.collecting = true;
      // After the current I/O callbacks, when the dropped chunks are no longer referenced by anyone.
      setImmediate(() => {
        this.collecting = false;
        void collect()?.({ type: 'major', execution: 'async' });
      });
    }
  }
}
