/**
 * The OpenTelemetry variables Keyward honours, parsed once with the rest of the
 * config (config.ts calls parseTraceSettings; telemetry/otel.ts reads the
 * result, so this sits below telemetry/ with the config). Tracing is on only
 * when an OTLP endpoint is set; then every proxied request gets a span. The
 * exporter's headers usually carry a vendor's API key: they are never echoed
 * in an error and never reach a plugin's copy of the config.
 */

export interface TraceSettings {
  /** Where spans are POSTed (OTLP/HTTP JSON): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. */
  readonly url: string;
  /** OTEL_EXPORTER_OTLP_HEADERS, then OTEL_EXPORTER_OTLP_TRACES_HEADERS on top (a secret: never logged). */
  readonly headers: Readonly<Record<string, string>>;
  /** OTEL_SERVICE_NAME, default `keyward`. */
  readonly serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES (`key=value,…`); OTEL_SERVICE_NAME wins over a `service.name` here. */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  /** OTEL_TRACES_SAMPLER (default `parentbased_always_on`: the caller's sampled flag decides, a request without one is sampled). */
  readonly sampler: SamplerName;
  /** OTEL_TRACES_SAMPLER_ARG: the ratio for the `traceidratio` samplers, 0 to 1 (default 1). */
  readonly samplerRatio: number;
}

export const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type SamplerName = (typeof SAMPLERS)[number];

/** Throws the config's error for `variable` (config.ts passes its ConfigError; this file cannot import it without a cycle). */
type Fail = (variable: string, accepts: string, got: string) => never;

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** `undefined` when tracing is off: neither endpoint variable is set, or OTEL_SDK_DISABLED=true. */
export function parseTraceSettings(get: (name: string) => string | undefined, fail: Fail): TraceSettings | undefined {
  if (get('OTEL_SDK_DISABLED')?.trim().toLowerCase() === 'true') return undefined;
  const signal = get('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = get('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (signal === undefined && base === undefined) return undefined;
  const url = signal !== undefined
    ? endpoint('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', signal, fail).href
    : appendTracesPath(endpoint('OTEL_EXPORTER_OTLP_ENDPOINT', base!, fail));
  const headers = {
    ...keyValues('OTEL_EXPORTER_OTLP_HEADERS', get('OTEL_EXPORTER_OTLP_HEADERS'), fail, true),
    ...keyValues('OTEL_EXPORTER_OTLP_TRACES_HEADERS', get('OTEL_EXPORTER_OTLP_TRACES_HEADERS'), fail, true),
  };
  for (const name of Object.keys(headers)) {
    if (!HEADER_NAME.test(name)) fail('OTEL_EXPORTER_OTLP_HEADERS', 'comma-separated name=value pairs with valid header names', name);
  }
  const serviceName = get('OTEL_SERVICE_NAME')?.trim() || 'keyward';
  const resourceAttributes = keyValues('OTEL_RESOURCE_ATTRIBUTES', get('OTEL_RESOURCE_ATTRIBUTES'), fail, false);
  const samplerRaw = get('OTEL_TRACES_SAMPLER')?.trim() ?? 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(samplerRaw)) fail('OTEL_TRACES_SAMPLER', `one of ${SAMPLERS.join(', ')}`, samplerRaw);
  const ratioRaw = get('OTEL_TRACES_SAMPLER_ARG')?.trim();
  const samplerRatio = ratioRaw === undefined ? 1 : Number(ratioRaw);
  if (ratioRaw !== undefined && (!/^[0-9.]+$/.test(ratioRaw) || !(samplerRatio >= 0 && samplerRatio <= 1))) fail('OTEL_TRACES_SAMPLER_ARG', 'a ratio from 0 to 1', ratioRaw);
  return Object.freeze({
    url, headers: Object.freeze(headers), serviceName, resourceAttributes: Object.freeze(resourceAttributes), sampler: samplerRaw as SamplerName, samplerRatio,
  });
}

function endpoint(name: string, raw: string, fail: Fail): URL {
  let url: URL | undefined;
  try {
    url = new URL(raw.trim());
  } catch {
    url = undefined;
  }
  // The URL itself may hold a token (userinfo, query): echo only its scheme and host.
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) {
    fail(name, 'an http(s) URL such as http://127.0.0.1:4318 (no user or password)', url ? `${url.protocol}//${url.host}` : '<unparsable URL>');
  }
  return url;
}

/** The OTLP spec: the general endpoint gets the signal's path appended to its own path. */
function appendTracesPath(url: URL): string {
  url.pathname = url.pathname.replace(/\/+$/, '') + '/v1/traces';
  return url.href;
}

/** W3C-baggage-like `key=value,key2=value2`, values percent-decoded (the OTel environment variable format). */
function keyValues(name: string, raw: string | undefined, fail: Fail, secret: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const item of raw.split(',')) {
    if (item.trim() === '') continue;
    const eq = item.indexOf('=');
    const key = eq === -1 ? '' : item.slice(0, eq).trim();
    let value: string | undefined;
    try {
      value = eq === -1 ? undefined : decodeURIComponent(item.slice(eq + 1).trim());
    } catch {
      value = undefined;
    }
    if (!key || value === undefined) fail(name, 'comma-separated key=value pairs (values percent-encoded)', secret ? '<redacted>' : item);
    out[key] = value;
  }
  return out;
}
