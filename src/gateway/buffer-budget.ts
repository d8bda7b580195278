/**
 * The process-wide ceiling on request-body bytes held in memory while a scan
 * decides them (KEYWARD_BUFFER_BUDGET). Requests take bytes as they hold them
 * and give them back as they are forwarded or dropped; a take that would pass
 * the ceiling is refused, so the sum never passes it, however many requests.
 */
export class BufferBudget {
  private heldBytes = 0;

  constructor(readonly limit: number) {}

  /** Bytes held by all requests right now. */
  get held(): number {
    return this.heldBytes;
  }

  /** Takes `bytes`; false (and nothing taken) when that would pass the limit. */
  take(bytes: number): boolean {
    if (this.heldBytes + bytes > this.limit) return false;
    this.heldBytes += bytes;
    return true;
  }

  release(bytes: number): void {
    this.heldBytes -= bytes;
  }
}
