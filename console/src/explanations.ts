/**
 * Sentences the console uses to explain where something comes from or what a figure means: kept apart from the
 * pages (no JSX) so the tests compare them with what the API's document and the CLI say.
 */

/** Under the sign-in field: where a first-time operator gets a key (the org token is printed once, at creation). */
export const WHERE_KEYS_COME_FROM = 'The organisation token (otok_…) is printed once when the organisation is made: by '
  + '"npx keyward org create <name>" on the gateway\'s store, or in the answer to POST /v1/orgs. '
  + 'An admin key is made for you by an owner, on the Admin keys page.';

/** What `held` means, as the API's document and `keyward usage` say it (src/api/schemas/usage.ts, HELD_MEANS). */
export const HELD_MEANS = 'Held: set aside by running instances, not spent: requests admitted and not yet settled, and blocks leased ahead '
  + 'so that most requests need no store write. What goes unused comes back; limit − used − held is what new requests can still get.';
