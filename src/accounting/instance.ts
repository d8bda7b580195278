/**
 * This instance's name in the store: random per process (per container in tests, which run several in one
 * process). Lease holders and the shards of counters it writes carry it, so no two instances ever write the
 * same document, and a shard's totals are this instance's alone.
 */
import { randomBytes } from 'node:crypto';
import { injectable } from 'tsyringe';

@injectable()
export class Instance {
  readonly id = randomBytes(6).toString('base64url');
}
