/**
 * Names on the Firestore store's credentials, tokens and admin keys: the fields a document keeps
 * (`name`, and `namePrefixes`, every prefix of the folded name, which `?name=` pages ask with
 * `array-contains`: store/name-key.ts) and a rename, an update under an exists precondition
 * (a record deleted meanwhile is not renamed, nor made again).
 */
import type { DocumentSnapshot } from '@google-cloud/firestore';
import { namePrefixes } from '../name-key.js';
import { Code, errCode } from './db.js';

/** The name and its prefixes, or null for both (unnamed, or cleared). */
export function nameFields(name: string | null | undefined): { name: string | null; namePrefixes: string[] | null } {
  return name == null ? { name: null, namePrefixes: null } : { name, namePrefixes: namePrefixes(name) };
}

/** Sets or clears the name of `d` (read before) if it is the organisation's and still there. */
export async function renameDoc(d: DocumentSnapshot | undefined, orgId: string, name: string | null): Promise<boolean> {
  if (!d?.exists || d.get('orgId') !== orgId) return false;
  try {
    await d.ref.update(nameFields(name));
    return true;
  } catch (err) {
    if (errCode(err) === Code.NOT_FOUND) return false;
    throw err;
  }
}
