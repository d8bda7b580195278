/**
 * Every admin request runs the same steps, so no handler can forget one:
 * authentication (org token, admin key, a member's session: the console's cookie with its
 * X-Keyward-CSRF value or the CLI's bearer, or the operator's admin token; a failure while
 * the client address cools down is answered 429 instead of 401, a valid token
 * never is), the organisation's admin rate limit, the caller's role (the one
 * place roles are checked: 403 `forbidden` before the body is read), the
 * Idempotency-Key (Stripe's semantics), the handler, the audit record, and one
 * access-log line. Handlers only parse, call a service and return a Reply.
 * A route may take form bodies too and answer in OAuth's error shape (`forms`, `errorFormat`: the
 * token exchange, an RFC 8693 endpoint that OAuth clients call).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { ApiError, Errors, toApiError, toOAuthError } from '../errors.js';
import { RateLimiter } from '../accounting/rate-limiter.js';
import { isFormBody, parseFormBody, readRawBody, parseJsonBody } from '../http/body.js';
import { sendError, sendJson, sendOAuthError } from '../http/reply.js';
import type { Principal, Reply, Route } from '../http/router.js';
import type { Logger } from '../log.js';
import type { IdempotencyStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { AbuseGuard } from '../controls/abuse-guard.js';
import { AuditLog } from '../controls/audit-log.js';
import { DeploymentSecrets, IDEMPOTENCY_HMAC_KEY } from '../vault/deployment-secrets.js';
import { bearer, OrgService } from '../vault/org-service.js';
import { SessionService, sessionCookie } from '../vault/sessions.js';
import { traceFields } from '../telemetry/trace.js';
import { Metrics } from '../telemetry/metrics.js';
import { clientAddress } from '../controls/client-address.js';
import { NO_QUERY } from './schemas/query.js';
import { rolesOf } from '../vault/roles.js';

const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/** Where a signed-in console learns who it is and its anti-CSRF value (the one cookie call that needs no X-Keyward-CSRF). */
export const SESSION_PATH = '/v1/session';
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

@injectable()
export class AdminPipeline {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.IdempotencyStore) private readonly idempotency: IdempotencyStore,
    @inject(OrgService) private readonly orgs: OrgService,
    @inject(AbuseGuard) private readonly guard: AbuseGuard,
    @inject(AuditLog) private readonly audit: AuditLog,
    @inject(RateLimiter) private readonly rateLimiter: RateLimiter,
    @inject(Metrics) private readonly metrics: Metrics,
    @inject(DeploymentSecrets) private readonly secrets: DeploymentSecrets,
    @inject(SessionService) private readonly sessions: SessionService,
  ) {}

  async handle(route: Route, params: Record<string, string>, search: URLSearchParams, req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const started = process.hrtime.bigint();
    const ip = clientAddress(req, this.config.trustedProxies);
    const path = (req.url ?? '').split('?')[0]!;
    let principal: Principal = { kind: 'none' };
    let status = 500;
    let claimed: string | undefined;
    try {
      principal = await this.authenticate(route, req, ip, requestId, path);
      const org = principal.kind === 'org' ? principal.org.id : undefined;
      if (org) {
        try {
          this.rateLimiter.take(`admin:${org}`, this.config.adminRate);
        } catch (err) {
          this.audit.refused({ requestId, org, actor: this.actor(principal), action: 'admin.rate_limited', target: path, outcome: 'denied', ip });
          this.log.warn({ org, request_id: requestId }, 'admin rate limit reached');
          throw err;
        }
      }
      if (principal.kind === 'org' && !rolesOf(route.method, route.roles).includes(principal.role)) {
        throw Errors.forbidden(`A ${principal.role} key may not call ${route.method} ${route.pattern}.`);
      }

      // No query parameter is accepted where the route declares none.
      const query = (route.query ?? NO_QUERY).parse(search);
      let raw: Buffer | undefined;
      const body = async () => {
        raw ??= await readRawBody(req, this.config.maxAdminBody);
        const value = route.forms && isFormBody(req) ? parseFormBody(raw) : parseJsonBody(raw);
        return route.body ? route.body.parse(value) : value;
      };

      const key = req.headers['idempotency-key'];
      let reply: Reply | undefined;
      if (route.idempotent && key !== undefined) {
        if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
          throw Errors.invalidRequest('`Idempotency-Key` must be 1 to 255 printable characters.', 'Idempotency-Key');
        }
        raw = await readRawBody(req, this.config.maxAdminBody);
        // An admin key's keys are its own: a replay never answers one caller with another's (differently scoped) request.
        const caller = principal.kind === 'org' && principal.role !== 'owner' ? `:${principal.actor}` : '';
        const scope = `${org ?? 'admin'}${caller}|${req.method} ${path}|${key}`;
        // Keyed by a secret of the deployment: a stored hash of a body that carries a key confirms no guess of it.
        const requestHash = await this.secrets.hmac(IDEMPOTENCY_HMAC_KEY, raw);
        const now = this.clock.now();
        const outcome = await this.idempotency.claimIdempotency({ scope, requestHash, createdAt: now }, now - IDEMPOTENCY_TTL_MS);
        if (outcome !== 'claimed') {
          if (outcome.requestHash !== requestHash || !outcome.response) throw Errors.idempotencyConflict();
          status = outcome.response.status;
          sendJson(res, outcome.response.status, outcome.response.body, { 'idempotent-replayed': 'true' });
          return;
        }
        claimed = scope;
      }

      reply = await route.handler({ req, params, query, requestId, ip, principal, body });
      if (!req.readableEnded) req.resume();

      if (claimed) {
        const stored = { ...(reply.body as Record<string, unknown>) };
        for (const f of reply.secretFields ?? []) delete stored[f];
        await this.idempotency.completeIdempotency(claimed, { status: reply.status, body: stored });
        claimed = undefined;
      }
      if (route.action && !reply.refusal) {
        const target = reply.target ?? params.id ?? String((reply.body as { id?: unknown }).id ?? '');
        // A name the organisation gave what was acted on (never a secret): the reply's, or what the handler says.
        const named = (reply.body as { name?: unknown } | undefined)?.name;
        const targetName = reply.targetName ?? (typeof named === 'string' ? named : undefined);
        // Stored before the answer (AuditLog.record never rejects: a store failure is logged and retried).
        await this.audit.record({
          requestId, org: org ?? reply.org ?? '', actor: reply.actor ?? this.actor(principal), action: route.action, target, ...(targetName !== undefined ? { targetName } : {}), outcome: 'success', ip,
        });
      }
      status = reply.status;
      sendJson(res, reply.status, reply.body, reply.headers);
    } catch (err) {
      const apiError = toApiError(err);
      if (!(err instanceof ApiError)) this.log.error({ err, request_id: requestId }, 'admin request failed');
      if (claimed) await this.idempotency.releaseIdempotency(claimed).catch(() => {});
      if (route.action && principal.kind !== 'none' && apiError.status < 500) {
        const org = principal.kind === 'org' ? principal.org.id : '';
        const outcome = apiError.code === 'forbidden' ? 'denied' : 'failure';
        await this.audit.record({ requestId, org, actor: this.actor(principal), action: route.action, target: params.id ?? path, outcome, ip });
      }
      // Don't leave an unread body on a keep-alive connection.
      if (!req.readableEnded) res.setHeader('connection', 'close');
      status = apiError.status;
      if (route.errorFormat === 'oauth') sendOAuthError(res, toOAuthError(err));
      else sendError(res, apiError);
    } finally {
      this.metrics.admin(req.method ?? '', route.pattern, status);
      const latencyS = Number(process.hrtime.bigint() - started) / 1e9;
      this.log.info({
        httpRequest: { requestMethod: req.method, requestUrl: path, status, latency: `${latencyS.toFixed(6)}s`, remoteIp: ip },
        keyward: { request_id: requestId, ...(principal.kind === 'org' ? { org: principal.org.id } : {}), actor: this.actor(principal) },
        ...traceFields(req.headers, this.config.gcpProject),
      }, 'admin request');
    }
  }

  private actor(p: Principal): string {
    return p.kind === 'org' ? p.actor : p.kind === 'admin' ? 'admin' : 'anonymous';
  }

  private async authenticate(route: Route, req: IncomingMessage, ip: string, requestId: string, path: string): Promise<Principal> {
    if (route.auth === 'none') return { kind: 'none' };
    try {
      // Node keeps only the first of repeated Authorization headers; two credentials are ambiguous, so neither counts.
      const authorization = (req.headersDistinct.authorization?.length ?? 0) > 1 ? undefined : req.headers.authorization;
      if (route.auth === 'admin') {
        if (!this.orgs.isAdmin(authorization)) throw Errors.unauthenticated();
        return { kind: 'admin', actor: 'admin' };
      }
      const presented = bearer(authorization);
      if (presented?.startsWith('kses_')) {
        const s = await this.sessions.authenticate(presented, 'cli');
        return { kind: 'org', org: s.org, actor: s.tokenId, role: s.role, expiresAt: s.expiresAt, retiring: false, session: { hash: s.sessionHash, via: 'bearer' } };
      }
      const cookie = authorization === undefined ? sessionCookie(req.headers.cookie) : undefined;
      if (cookie !== undefined) {
        const s = await this.sessions.authenticate(cookie, 'browser');
        // The cookie rides on every request the browser makes: only a call that shows the session's own value counts
        // (GET /v1/session hands it out: a page of another site cannot read that answer).
        if (!(route.method === 'GET' && route.pattern === SESSION_PATH) && !(await this.sessions.csrfMatches(s.sessionHash, req.headers['x-keyward-csrf']))) throw Errors.csrfRequired();
        return { kind: 'org', org: s.org, actor: s.tokenId, role: s.role, expiresAt: s.expiresAt, retiring: false, session: { hash: s.sessionHash, via: 'cookie' } };
      }
      const { org, tokenId, role, credentialIds, expiresAt, retiring } = await this.orgs.authenticate(authorization);
      return { kind: 'org', org, actor: tokenId, role, expiresAt, retiring, ...(credentialIds ? { credentialIds } : {}) };
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) throw this.guard.authFailed(ip, requestId, path, err);
      throw err;
    }
  }
}
