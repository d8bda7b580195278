/** Writing JSON replies and the contract's error shape. */
import type { ServerResponse } from 'node:http';
import type { ApiError, OAuthError } from '../errors.js';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const payload = Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(payload.length),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(payload);
}

export function sendError(res: ServerResponse, err: ApiError, headers: Record<string, string> = {}): void {
  sendJson(res, err.status, err.replyBody ?? err.body(), { ...headers, ...err.headers });
}

/** RFC 6749 §5.2's error response (an OAuth token endpoint's): `{"error", "error_description"}`. */
export function sendOAuthError(res: ServerResponse, err: OAuthError): void {
  sendJson(res, err.status, { error: err.error, error_description: err.message }, err.headers);
}

/** A complete raw HTTP/1.1 error response, for sockets the HTTP parser gave up on. */
export function rawErrorResponse(status: number, reason: string, err: ApiError): string {
  const body = JSON.stringify(err.body());
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
