/**
 * Test support: a local OTLP/HTTP trace receiver on 127.0.0.1:0 that keeps every
 * export it is sent (path, headers, raw body) and flattens the OTLP/JSON
 * payloads into spans with plain attribute maps, so a test can look spans up by
 * name and attribute and search the raw text for secrets.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedExport {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's enum: 2 SERVER, 3 CLIENT. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  status: { code?: number };
  resource: Record<string, string | number | boolean>;
}

export interface OtlpReceiver {
  url: string;
  exports: ReceivedExport[];
  spans(): ReceivedSpan[];
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };

function value(v: AnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  return JSON.stringify(v);
}

const attributes = (list: Array<{ key: string; value: AnyValue }> | undefined): Record<string, string | number | boolean> =>
  Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));

/** `status`: what every export is answered with (200, or e.g. 400 to play a collector that refuses them). */
export async function startOtlpReceiver(status = 200): Promise<OtlpReceiver> {
  const exports: ReceivedExport[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      exports.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 200 ? '{}' : '{"code":3,"message":"refused by the test"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    exports,
    spans: () => exports.flatMap((e) => {
      const doc = JSON.parse(e.body) as { resourceSpans?: any[] };
      return (doc.resourceSpans ?? []).flatMap((rs) => (rs.scopeSpans ?? []).flatMap((ss: any) => (ss.spans ?? []).map((s: any): ReceivedSpan => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: attributes(s.attributes),
        status: s.status ?? {},
        resource: attributes(rs.resource?.attributes),
      }))));
    }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
