/**
 * Prometheus metrics (prom-client) on a registry of this server's own, served
 * at GET /metrics. Hot-path series are bound to their label values once and
 * cached, and their counts are added into prom-client when the metrics are read,
 * so recording costs a few additions per request.
 */
import promClient from 'prom-client';
import type { KeyWrapper, WrappedKey } from '../kms/key-wrapper.js';

const { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = promClient;

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * A hot-path counter's series and what was counted into it since /metrics was last read: prom-client's inc()
 * hashes the series' label values on every call (a string and ~0.5 µs), so a request adds to a number instead.
 */
interface Tally {
  child: promClient.Counter.Internal;
  pending: number;
}

export interface CacheStats {
  hits: number;
  misses: number;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly proxyRequests = new Counter({ name: 'keyward_proxy_requests_total', help: 'Proxy requests by provider and status sent to the caller.', labelNames: ['provider', 'status'] as const, registers: [this.registry], collect: () => this.flushTallies() });
  private readonly refusals = new Counter({ name: 'keyward_proxy_refusals_total', help: 'Proxy requests the gateway refused, by error code (quota_exceeded, rate_limited, invalid_token…).', labelNames: ['code'] as const, registers: [this.registry] });
  private readonly upstreamLatency = new Histogram({ name: 'keyward_upstream_duration_seconds', help: 'From forwarding to the last response byte, by provider.', labelNames: ['provider'] as const, buckets: LATENCY_BUCKETS, registers: [this.registry] });
  private readonly ttfb = new Histogram({ name: 'keyward_upstream_ttfb_seconds', help: 'From the request\'s arrival to the first upstream response byte, by provider.', labelNames: ['provider'] as const, buckets: LATENCY_BUCKETS, registers: [this.registry] });
  private readonly adminRequests = new Counter({ name: 'keyward_admin_requests_total', help: 'Admin API requests by method, route and status.', labelNames: ['method', 'route', 'status'] as const, registers: [this.registry] });
  private readonly kmsCalls = new Counter({ name: 'keyward_kms_calls_total', help: 'Key wrapper calls by operation and outcome.', labelNames: ['kind', 'op', 'outcome'] as const, registers: [this.registry] });
  private readonly spend = new Counter({
    name: 'keyward_spend_usd_total',
    help: 'Spend in USD of forwarded requests (their reported usage at the price book\'s prices), by provider and the price table\'s model name (`prefix*` as written; `unpriced` when none matched).',
    labelNames: ['provider', 'model'] as const,
    registers: [this.registry],
    collect: () => this.flushTallies(),
  });
  private readonly poolAttempts = new Counter({ name: 'keyward_pool_attempts_total', help: 'Pooled requests\' attempts by member credential and outcome (a status, `error` or `timeout`).', labelNames: ['credential', 'outcome'] as const, registers: [this.registry] });
  private readonly poolFailovers = new Counter({ name: 'keyward_pool_failovers_total', help: 'Pooled requests sent on to another member after this credential failed.', labelNames: ['credential'] as const, registers: [this.registry] });
  private readonly poolCooldowns = new Counter({ name: 'keyward_pool_cooldowns_total', help: 'Times a member credential started (or lengthened) a cooling.', labelNames: ['credential'] as const, registers: [this.registry] });
  private readonly boundAttempts = new Map<string, promClient.Counter.Internal>();
  private readonly boundSpend = new Map<string, Tally>();
  private readonly toolCalls = new Counter({ name: 'keyward_mcp_tool_calls_total', help: 'MCP tools/call messages forwarded, by provider and tool; the first 64 tool names of a provider get a label, later ones count as (other).', labelNames: ['provider', 'tool'] as const, registers: [this.registry] });
  /** The tool names labelled so far, by provider (a caller names tools: the labels stay bounded). */
  private readonly toolNames = new Map<string, Set<string>>();
  private readonly unknownUsageFields = new Counter({
    name: 'keyward_unknown_usage_total',
    help: 'Responses whose usage reported a field the reader does not know (a token count its shape neither prices nor knows to be part of another, or one its model has no price for: a 1-hour cache write); a capped request is settled at no less than its reservation. By provider and field; the first 32 fields of a provider get a label, later ones count as (other).',
    labelNames: ['provider', 'field'] as const,
    registers: [this.registry],
  });
  /** The unknown usage fields labelled so far, by provider (a provider's response names them: the labels stay bounded). */
  private readonly unknownNames = new Map<string, Set<string>>();
  private readonly bound = new Map<string, { requests: Map<number, Tally>; latency: promClient.Histogram.Internal<'provider'>; ttfb: promClient.Histogram.Internal<'provider'> }>();
  /** Every tally of the hot-path counters, flushed into prom-client when /metrics is read. */
  private readonly tallies: Tally[] = [];

  /** `unpriced`: requests by provider and model that named a model with no price of its own (pricing/unpriced-models.ts, bounded). */
  constructor(caches: () => Record<string, CacheStats>, inflight: () => number, unpriced: () => ReadonlyMap<string, ReadonlyMap<string, number>> | undefined = () => undefined) {
    collectDefaultMetrics({ register: this.registry, prefix: 'keyward_' });
    const registry = this.registry;
    new Counter({
      name: 'keyward_unpriced_requests_total',
      help: 'Requests that named a model with no price of its own in the price book (refused under a cap, or priced by KEYWARD_UNPRICED=family_max), by provider and model (the first 64 names of a provider get a label, later ones count as (other)); and requests forwarded without a cap whose price dimension selected a tier the book does not price, by the price table\'s model name and `dimension` (`service_tier=priority`).',
      labelNames: ['provider', 'model', 'dimension'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [provider, models] of unpriced() ?? []) {
          for (const [key, n] of models) {
            // A dimension's count is keyed `model\0dimension` (pricing/unpriced-models.ts).
            const at = key.indexOf('\0');
            this.inc({ provider, model: at === -1 ? key : key.slice(0, at), dimension: at === -1 ? '' : key.slice(at + 1) }, n);
          }
        }
      },
    });
    new Counter({
      name: 'keyward_cache_requests_total',
      help: 'Token and decrypted-key cache lookups by result (hit ratio = hit / (hit + miss)).',
      labelNames: ['cache', 'result'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [cache, s] of Object.entries(caches())) {
          this.inc({ cache, result: 'hit' }, s.hits);
          this.inc({ cache, result: 'miss' }, s.misses);
        }
      },
    });
    new Gauge({
      name: 'keyward_inflight_requests',
      help: 'Requests being served now (streams included).',
      registers: [registry],
      collect() {
        this.set(inflight());
      },
    });
  }

  private forProvider(provider: string) {
    let b = this.bound.get(provider);
    if (!b) {
      b = { requests: new Map(), latency: this.upstreamLatency.labels(provider), ttfb: this.ttfb.labels(provider) };
      this.bound.set(provider, b);
    }
    return b;
  }

  proxied(provider: string, status: number, upstreamSeconds: number | undefined, ttfbSeconds: number | undefined): void {
    const b = this.forProvider(provider);
    let c = b.requests.get(status);
    if (!c) {
      c = this.tally(this.proxyRequests.labels(provider, String(status)));
      b.requests.set(status, c);
    }
    c.pending++;
    if (upstreamSeconds !== undefined) b.latency.observe(upstreamSeconds);
    if (ttfbSeconds !== undefined) b.ttfb.observe(ttfbSeconds);
  }

  /** A response of `provider` reported usage `field` the reader does not know (usage readers give word-like names only). */
  unknownUsage(provider: string, field: string): void {
    let names = this.unknownNames.get(provider);
    if (!names) this.unknownNames.set(provider, (names = new Set()));
    if (!names.has(field) && names.size < 32) names.add(field);
    this.unknownUsageFields.inc({ provider, field: names.has(field) ? field : '(other)' });
  }

  /** `model`: the price table's name or `unpriced` (bounded by the tables), never the caller's string. */
  spent(provider: string, model: string, micros: number): void {
    const key = `${provider}\0${model}`;
    let c = this.boundSpend.get(key);
    if (!c) {
      c = this.tally(this.spend.labels(provider, model));
      this.boundSpend.set(key, c);
    }
    c.pending += micros / 1_000_000;
  }

  /** The series shows from its first count, as inc() made it (a spend of 0 included). */
  private tally(child: promClient.Counter.Internal): Tally {
    child.inc(0);
    const t = { child, pending: 0 };
    this.tallies.push(t);
    return t;
  }

  /** Adds what the hot path counted since the last read (both counters' collect hooks call it; the second finds nothing). */
  private flushTallies(): void {
    for (const t of this.tallies) {
      if (t.pending === 0) continue;
      t.child.inc(t.pending);
      t.pending = 0;
    }
  }

  /** One forwarded MCP tools/call. */
  toolCall(provider: string, tool: string): void {
    let names = this.toolNames.get(provider);
    if (!names) this.toolNames.set(provider, (names = new Set()));
    if (!names.has(tool)) {
      if (names.size < 64) names.add(tool);
      else tool = '(other)';
    }
    this.toolCalls.labels(provider, tool).inc();
  }

  refused(code: string, provider: string | undefined, status: number): void {
    this.refusals.labels(code).inc();
    this.proxyRequests.labels(provider ?? 'unknown', String(status)).inc();
  }

  /** One attempt of a pooled request; `failover`: it went on to another member; `cooled`: this member began cooling. */
  poolAttempt(credentialId: string, outcome: string, failover: boolean, cooled: boolean): void {
    // Bound once per (credential, outcome), as spend is: labels() hashes its values on every call.
    const key = `${credentialId}\0${outcome}`;
    let c = this.boundAttempts.get(key);
    if (!c) {
      c = this.poolAttempts.labels(credentialId, outcome);
      this.boundAttempts.set(key, c);
    }
    c.inc();
    if (failover) this.poolFailovers.labels(credentialId).inc();
    if (cooled) this.poolCooldowns.labels(credentialId).inc();
  }

  admin(method: string, route: string, status: number): void {
    this.adminRequests.labels(method, route, String(status)).inc();
  }

  /** Counts every call of a key wrapper by outcome. */
  meter(wrapper: KeyWrapper): KeyWrapper {
    const count = async <T>(op: string, fn: () => Promise<T>): Promise<T> => {
      try {
        const out = await fn();
        this.kmsCalls.labels(wrapper.kind, op, 'ok').inc();
        return out;
      } catch (err) {
        this.kmsCalls.labels(wrapper.kind, op, 'error').inc();
        throw err;
      }
    };
    return {
      kind: wrapper.kind,
      wrap: (dek, aad) => count<WrappedKey>('wrap', () => wrapper.wrap(dek, aad)),
      unwrap: (wrapped, aad, kekId) => count('unwrap', () => wrapper.unwrap(wrapped, aad, kekId)),
      currentKekId: () => wrapper.currentKekId(),
      ping: () => wrapper.ping(),
      close: () => wrapper.close(),
    };
  }
}
