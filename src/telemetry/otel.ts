/**
 * Tracing with the official OpenTelemetry SDK, loaded only when an OTLP endpoint
 * is configured (container.ts imports this file dynamically). One SERVER span per
 * proxied request, parented on the caller's W3C `traceparent`, with the GenAI
 * semantic conventions and Keyward's ids; CLIENT child spans around store and KMS
 * calls. Spans are batched (BatchSpanProcessor) and sent over OTLP/HTTP; shutdown
 * exports what is left.
 *
 * Nothing global is registered (no global tracer provider, context manager or
 * propagator): several servers in one process (tests) each keep their own. A
 * store or KMS call finds its request through this instance's AsyncLocalStorage,
 * entered by RequestSpan.run; a call made outside any open request span (a
 * background flush, the admin API) is a root span of its own.
 *
 * Never a secret in a span: attributes are ids, names, counts and statuses; a
 * failed call records its error's name, never its message; the exporter's headers
 * stay in the exporter.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler, type SpanExporter,
} from '@opentelemetry/sdk-trace';
import type { Logger } from '../log.js';
import { genAiOperation, genAiProviderName } from './gen-ai.js';
import type { TraceSettings } from '../settings/trace-settings.js';
import type { RequestSpan, TracedRequest, Tracing } from './tracing.js';

/** Methods that are not calls to the backend (or are called by health probes and shutdown, which would only add noise). */
const UNTRACED = new Set<PropertyKey>(['constructor', 'watch', 'isLive', 'allCredentials', 'ping', 'close']);
/** A caller's free-form string (a model name) is cut to this many characters in an attribute. */
const ATTRIBUTE_VALUE_LIMIT = 256;
/** Export failures are logged at most once a minute (an unreachable collector would otherwise log every batch). */
const EXPORT_WARN_EVERY_MS = 60_000;
/**
 * Shutdown waits this long for the last spans to be exported, then goes on without them: a slow or unreachable
 * collector (the exporter retries) must not eat the drain window (KEYWARD_DRAIN_S; Cloud Run kills 10 s after SIGTERM).
 */
const SHUTDOWN_WAIT_MS = 2_000;

const DB_SYSTEMS: Readonly<Record<string, string>> = { sqlite: 'sqlite', firestore: 'gcp.firestore' };

/** OTEL_TRACES_SAMPLER's standard names, as the SDK's samplers. */
function samplerOf(settings: TraceSettings): Sampler {
  const root = settings.sampler.endsWith('always_on') ? new AlwaysOnSampler()
    : settings.sampler.endsWith('always_off') ? new AlwaysOffSampler()
      : new TraceIdRatioBasedSampler(settings.samplerRatio);
  return settings.sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

class OtelRequestSpan implements RequestSpan {
  ended = false;
  readonly context: Context;

  constructor(
    readonly span: Span,
    private readonly als: AsyncLocalStorage<OtelRequestSpan>,
  ) {
    this.context = trace.setSpan(ROOT_CONTEXT, span);
  }

  run<T>(fn: () => T): T {
    return this.als.run(this, fn);
  }

  end(request: TracedRequest): void {
    if (this.ended) return;
    this.ended = true;
    // Sampled out: nothing will be exported, so nothing to build.
    if (!this.span.isRecording()) {
      this.span.end();
      return;
    }
    const status = request.status ?? 499;
    const attributes: Attributes = {
      'http.response.status_code': status,
      'keyward.request_id': request.requestId,
      'keyward.forwarded': request.forwarded,
      'client.address': request.ip,
    };
    if (request.orgId) attributes['keyward.org_id'] = request.orgId;
    if (request.credentialId) attributes['keyward.credential_id'] = request.credentialId;
    if (request.tokenId) attributes['keyward.token_id'] = request.tokenId;
    if (request.error) attributes['keyward.error_code'] = request.error.code;
    // A pooled request: one event per attempt naming the member tried, and how many there were.
    if (request.attempts) {
      attributes['keyward.pool.attempts'] = request.attempts.length;
      for (const [i, a] of request.attempts.entries()) this.span.addEvent('keyward.pool.attempt', { 'keyward.pool.attempt': i + 1, 'keyward.credential_id': a.credentialId, 'keyward.pool.outcome': a.outcome });
    }
    let operation: string | undefined;
    if (request.provider) {
      const name = genAiProviderName(request.provider.id);
      attributes['keyward.provider'] = request.provider.id;
      attributes['gen_ai.provider.name'] = name;
      // The older attribute, still what many backends read.
      attributes['gen_ai.system'] = name;
      if (request.route) {
        attributes['http.route'] = `/v1/proxy/${request.route.path}`;
        operation = genAiOperation(request.route.path);
        if (operation) attributes['gen_ai.operation.name'] = operation;
      }
    }
    // The body is read for the model only when a stage needs it; otherwise the model the response names
    // stands in (the same name, or its dated snapshot), and is also the response model.
    const model = request.model ?? request.responseModel;
    if (model !== undefined) attributes['gen_ai.request.model'] = model.slice(0, ATTRIBUTE_VALUE_LIMIT);
    if (request.responseModel !== undefined) attributes['gen_ai.response.model'] = request.responseModel;
    // Usage where there can be some: an inference call, or whatever reported tokens (not a model list's zeros).
    if (request.forwarded && (operation || request.usage.inputTokens > 0 || request.usage.outputTokens > 0)) {
      attributes['gen_ai.usage.input_tokens'] = request.usage.inputTokens;
      attributes['gen_ai.usage.output_tokens'] = request.usage.outputTokens;
    }
    // An MCP request names its tool calls (OpenTelemetry's MCP conventions: the method and gen_ai.tool.name).
    if (request.toolCalls?.length) Object.assign(attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': request.toolCalls.join(',').slice(0, ATTRIBUTE_VALUE_LIMIT) });
    if (request.spentMicros !== undefined) attributes['keyward.spend_usd'] = request.spentMicros / 1e6;
    if (status >= 500) {
      attributes['error.type'] = request.error?.code ?? String(status);
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.span.setAttributes(attributes);
    // The GenAI span name `{operation} {model}` when it is an inference call; the HTTP one otherwise.
    this.span.updateName(operation ? `${operation}${model !== undefined ? ` ${model.slice(0, ATTRIBUTE_VALUE_LIMIT)}` : ''}` : `${request.method} ${attributes['http.route'] ?? '/v1/proxy'}`);
    this.span.end();
  }
}

export class OtelTracing implements Tracing {
  private readonly provider: TracerProvider;
  private readonly tracer: Tracer;
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly als = new AsyncLocalStorage<OtelRequestSpan>();
  private lastExportWarning = 0;

  constructor(settings: TraceSettings, private readonly log: Logger) {
    const exporter = new OTLPTraceExporter({ url: settings.url, headers: { ...settings.headers } });
    const resource = defaultResource().merge(resourceFromAttributes({ ...settings.resourceAttributes, 'service.name': settings.serviceName }));
    this.provider = new TracerProvider({
      resource,
      sampler: samplerOf(settings),
      spanLimits: { attributeValueLengthLimit: ATTRIBUTE_VALUE_LIMIT },
      spanProcessors: [new BatchSpanProcessor({ exporter: this.warnOnFailure(exporter) })],
    });
    this.tracer = this.provider.getTracer('keyward');
  }

  startRequest(headers: IncomingHttpHeaders): RequestSpan {
    const parent = this.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    const span = this.tracer.startSpan('POST /v1/proxy', { kind: SpanKind.SERVER }, parent);
    return new OtelRequestSpan(span, this.als);
  }

  traceCalls<T extends object>(target: T, component: 'store' | 'kms', system: string): T {
    const wrapped = new Map<PropertyKey, unknown>();
    const base: Attributes = component === 'store'
      ? { 'db.system.name': DB_SYSTEMS[system] ?? system }
      : { 'keyward.kms.kind': system };
    return new Proxy(target, {
      get: (obj, prop) => {
        const value = Reflect.get(obj, prop, obj) as unknown;
        if (typeof value !== 'function' || UNTRACED.has(prop) || typeof prop === 'symbol') return value;
        let fn = wrapped.get(prop);
        if (!fn) {
          const name = `${component}.${prop}`;
          const attributes: Attributes = component === 'store' ? { ...base, 'db.operation.name': prop } : { ...base, 'keyward.kms.operation': prop };
          fn = (...args: unknown[]) => this.call(name, attributes, () => (value as (...a: unknown[]) => unknown).apply(obj, args));
          wrapped.set(prop, fn);
        }
        return fn;
      },
    });
  }

  /** Never rejects: a collector that is down costs a warning, not a failed shutdown. */
  async shutdown(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), SHUTDOWN_WAIT_MS);
      timer.unref();
    });
    const outcome = await Promise.race([this.provider.shutdown().then(() => 'done' as const, () => 'failed' as const), gaveUp]);
    clearTimeout(timer);
    if (outcome === 'timeout') this.log.warn({ waited_ms: SHUTDOWN_WAIT_MS }, 'trace export did not finish at shutdown: the last spans are lost');
  }

  /** A CLIENT span around one call: a child of the open request span it was made for, else a root span. */
  private call(name: string, attributes: Attributes, fn: () => unknown): unknown {
    const request = this.als.getStore();
    const parent = request && !request.ended ? request.context : ROOT_CONTEXT;
    const span = this.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
    const failed = (err: unknown): never => {
      // The error's name only: a message may quote what the backend was given.
      span.setAttribute('error.type', err instanceof Error ? err.name : 'error');
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      throw err;
    };
    let out: unknown;
    try {
      out = fn();
    } catch (err) {
      failed(err);
    }
    if (out instanceof Promise) {
      return out.then((v) => {
        span.end();
        return v;
      }, failed);
    }
    span.end();
    return out;
  }

  /** The exporter, logging a failed export (its error's message only, never the headers) at most once a minute. */
  private warnOnFailure(exporter: SpanExporter): SpanExporter {
    return {
      export: (spans, done) => exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && Date.now() - this.lastExportWarning >= EXPORT_WARN_EVERY_MS) {
          this.lastExportWarning = Date.now();
          this.log.warn({ spans: spans.length, err: { message: result.error?.message.slice(0, 200) ?? 'export failed' } }, 'trace export failed');
        }
        done(result);
      }),
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    };
  }
}
