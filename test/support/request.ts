/**
 * Test support: one HTTP/1.1 request through node:http on its own connection (no client pool: the gateway's own
 * connection handling is what a test sees), read whole. What fetch hides is kept: the status message, the raw header
 * lines, the body's framing. A body goes with content-type application/json (a header given overrides it) and a
 * content-length, or with `chunked`, in pieces of that many bytes without one (transfer-encoding: chunked); no
 * body, no framing headers. A connection that fails rejects; any answer resolves, whatever its status.
 * (test/support/transport.ts sends over HTTP/1.1 or h2c with the body trickled; test/adversarial/_harness.ts
 * writes raw bytes.)
 */
import http from 'node:http';

export interface Reply {
  status: number;
  statusMessage: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  text: string;
  /** The body parsed as JSON; undefined when it is not JSON. */
  body: any;
}

export interface RequestOptions {
  /** Default POST. */
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the body in pieces of this many bytes, chunked, without a content-length. */
  chunked?: number;
}

export function request(url: string, options: RequestOptions = {}): Promise<Reply> {
  const { body, chunked } = options;
  const framing: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json', ...(chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) }) };
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'POST', agent: false, headers: { ...framing, ...options.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let parsed: any;
        try {
          parsed = JSON.parse(text);
        } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, statusMessage: res.statusMessage ?? '', headers: res.headers, rawHeaders: res.rawHeaders, text, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body !== undefined && chunked) {
      for (let i = 0; i < body.length; i += chunked) req.write(typeof body === 'string' ? body.slice(i, i + chunked) : body.subarray(i, i + chunked));
      req.end();
    } else {
      req.end(body);
    }
  });
}
