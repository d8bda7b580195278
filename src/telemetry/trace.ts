/**
 * Trace correlation for Cloud Logging: a log line carrying
 * `logging.googleapis.com/trace` is grouped with the request's trace. Read from
 * W3C `traceparent` or Google's `X-Cloud-Trace-Context`.
 */
import type { IncomingHttpHeaders } from 'node:http';

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const CLOUD_TRACE = /^([0-9a-f]{32})(?:\/([0-9]{1,20}))?(?:;o=([01]))?$/;

export function traceFields(headers: IncomingHttpHeaders, project: string | undefined): Record<string, string | boolean> {
  let traceId: string | undefined;
  let spanId: string | undefined;
  let sampled: boolean | undefined;
  const tp = headers.traceparent;
  const m = typeof tp === 'string' ? TRACEPARENT.exec(tp.trim()) : null;
  if (m && !/^0+$/.test(m[1]!)) {
    traceId = m[1];
    spanId = m[2];
    sampled = (parseInt(m[3]!, 16) & 1) === 1;
  } else {
    const ct = headers['x-cloud-trace-context'];
    const c = typeof ct === 'string' ? CLOUD_TRACE.exec(ct.trim()) : null;
    if (c) {
      traceId = c[1];
      if (c[2]) spanId = BigInt(c[2]).toString(16).padStart(16, '0');
      if (c[3]) sampled = c[3] === '1';
    }
  }
  if (!traceId) return {};
  const out: Record<string, string | boolean> = {
    'logging.googleapis.com/trace': project ? `projects/${project}/traces/${traceId}` : traceId,
  };
  if (spanId) out['logging.googleapis.com/spanId'] = spanId;
  if (sampled !== undefined) out['logging.googleapis.com/trace_sampled'] = sampled;
  return out;
}
