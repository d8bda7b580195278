/**
 * `keyward keys rewrap`: moves every credential's data key (DEK) to the key
 * wrapper's current key-encryption key. Each DEK is unwrapped under the KEK it
 * names (the current one, or the retired one still configured, such as
 * KEYWARD_LOCAL_KEK_PREVIOUS) and wrapped again under the current one; the
 * ciphertext of the API key is never touched. The store swaps the wrapped DEK
 * only if it is still the one read (compare-and-set), so a rotation or another
 * rewrap running at the same time is never overwritten. Safe to run again:
 * records already under the current KEK are skipped. Deployment secrets
 * (deployment-secrets.ts) are moved too; a failure among them is reported as
 * `secret:<name>`.
 */
import { UnwrapFailed, type KeyWrapper } from '../kms/key-wrapper.js';
import type { CredentialStore } from '../store/ports.js';
import type { Envelope } from './envelope.js';

export interface RewrapFailure {
  id: string;
  orgId: string;
  kekId: string;
  reason: string;
}

export interface RewrapReport {
  /** The KEK every DEK is now meant to be under. */
  kekId: string;
  scanned: number;
  rewrapped: number;
  alreadyCurrent: number;
  /** Rotated, deleted or rewrapped by someone else between the read and the write: left as they are. */
  changed: number;
  /** DEKs that could not be unwrapped (KEK not configured, or the record fails its integrity check). */
  failed: RewrapFailure[];
}

export class RewrapService {
  constructor(
    private readonly store: CredentialStore,
    private readonly envelope: Envelope,
    private readonly keyWrapper: KeyWrapper,
    private readonly secrets?: { rewrap(): Promise<{ failed: RewrapFailure[] }> },
  ) {}

  async run(onRecord?: (id: string, outcome: 'rewrapped' | 'current' | 'changed' | 'failed') => void): Promise<RewrapReport> {
    const kekId = await this.keyWrapper.currentKekId();
    const report: RewrapReport = { kekId, scanned: 0, rewrapped: 0, alreadyCurrent: 0, changed: 0, failed: [] };
    for await (const record of this.store.allCredentials()) {
      report.scanned++;
      if (record.kekId === kekId) {
        report.alreadyCurrent++;
        onRecord?.(record.id, 'current');
        continue;
      }
      let next: { wrappedDek: Buffer; kekId: string };
      try {
        next = await this.envelope.rewrap(record, record);
      } catch (err) {
        const reason = err instanceof UnwrapFailed
          ? 'the wrapped data key fails its integrity check (tampered or moved)'
          : err instanceof Error ? err.message : 'unwrap failed';
        report.failed.push({ id: record.id, orgId: record.orgId, kekId: record.kekId, reason });
        onRecord?.(record.id, 'failed');
        continue;
      }
      if (await this.store.rewrapCredential(record.id, record.wrappedDek, next.wrappedDek, next.kekId)) {
        report.rewrapped++;
        onRecord?.(record.id, 'rewrapped');
      } else {
        report.changed++;
        onRecord?.(record.id, 'changed');
      }
    }
    if (this.secrets) report.failed.push(...(await this.secrets.rewrap()).failed);
    return report;
  }
}
