/**
 * How the stores match a `?name=` prefix: on the name folded to lower case (so "prod" finds
 * "Prod OpenAI"), by whole code points. SQLite compares the folded column's first characters;
 * Firestore, which cannot order by time and range over a name in one query, keeps every prefix
 * of the folded name in an array (at most 64 names' worth of code points) and asks
 * `array-contains` (firestore/names.ts). Both adapters fold with these functions, so they match the same records.
 */

/** The name as prefixes are matched against it. */
export const nameKey = (name: string): string => name.toLowerCase();

/** Every prefix of the folded name, shortest first (what Firestore's `array-contains` looks up). */
export function namePrefixes(name: string): string[] {
  const points = Array.from(nameKey(name));
  return points.map((_, i) => points.slice(0, i + 1).join(''));
}

/** The folded prefix and its length in code points (SQLite's substr counts characters). */
export function prefixQuery(prefix: string): { key: string; length: number } {
  const key = nameKey(prefix);
  return { key, length: Array.from(key).length };
}
