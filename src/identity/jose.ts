/**
 * jose, loaded on the first token exchange rather than at start-up: a gateway that never exchanges
 * an OIDC token does not pay its import (about 30 ms of a cold start). One promise, shared.
 */
let library: Promise<typeof import('jose')> | undefined;

export const loadJose = (): Promise<typeof import('jose')> => (library ??= import('jose'));
