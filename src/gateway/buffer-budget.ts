/**
 * The process-wide ceiling on request-body bytes held in memory while a scan
 * decides them (KEYWARD_BUFFER_BUDGET). Requests take bytes as they hold them
 * and give them back as they are forwarded or dropped; a take that would pass
 * the ceiling is refused, so the sum never passes it, however many requests.
 * Each holder (a proxy token) may hold at most its share of it
 * (KEYWARD_BUFFER_PER_TOKEN) at once, across all its requests: one token
 * trickling bodies cannot take the budget every other token needs.
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

export class BufferBudget {
  private heldBytes = 0;
  private givenBack = 0;
  private collecting = false;
  private readonly collectEvery: number;
  /** Bytes held per holder, while it holds any. */
  private readonly holders = new Map<string, number>();

  /** `perHolder`: the most one holder may hold at once (default: the whole limit). */
  constructor(readonly limit: number, readonly perHolder: number = limit) {
    this.collectEvery = Math.min(16 * MIB, Math.max(MIB, Math.floor(limit / 8)));
  }

  /** Bytes held by all requests right now. */
  get held(): number {
    return this.heldBytes;
  }

  /** Bytes `holder` holds right now. */
  heldBy(holder: string): number {
    return this.holders.get(holder) ?? 0;
  }

  /** Takes `bytes` (for `holder`, when named); false (and nothing taken) when that would pass the limit or the holder's share. */
  take(bytes: number, holder?: string): boolean {
    if (this.heldBytes + bytes > this.limit) return false;
    if (holder !== undefined) {
      const mine = (this.holders.get(holder) ?? 0) + bytes;
      if (mine > this.perHolder) return false;
      this.holders.set(holder, mine);
    }
    this.heldBytes += bytes;
    return true;
  }

  /** Gives back `bytes` taken (for the same `holder`). */
  release(bytes: number, holder?: string): void {
    if (bytes === 0) return;
    if (holder !== undefined) {
      const left = (this.holders.get(holder) ?? 0) - bytes;
      if (left > 0) this.holders.set(holder, left);
      else this.holders.delete(holder);
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
