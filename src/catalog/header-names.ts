/**
 * Header names no provider may claim for its own use (a credential field's header, the
 * key's header): those that carry a caller's credential and the hop-by-hop ones. The
 * gateway's header hygiene (gateway/upstream/headers.ts) strips them from every request.
 */
export const CREDENTIAL_HEADERS = new Set([
  'authorization', 'proxy-authorization', 'x-api-key', 'x-goog-api-key', 'api-key', 'x-proxy-token', 'cookie', 'cookie2',
]);

export const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'expect', 'http2-settings',
]);
