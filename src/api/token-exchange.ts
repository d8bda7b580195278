/**
 * POST /v1/tokens/exchange (RFC 8693): a workload's OIDC token for a proxy token. No org token:
 * the workload's identity and the organisation's trust policies decide. Takes form or JSON bodies
 * and answers refusals in RFC 6749's shape (route options `forms` and `errorFormat`), as OAuth
 * clients expect of a token endpoint; the service (src/identity/token-exchange.ts) audits.
 */
import { inject, injectable } from 'tsyringe';
import type { Router } from '../http/router.js';
import { TokenExchange } from '../identity/token-exchange.js';
import { TOKEN_EXCHANGE, TokenExchangeResponse } from './schemas/token-exchange.js';

@injectable()
export class TokenExchangeApi {
  constructor(@inject(TokenExchange) private readonly exchange: TokenExchange) {}

  register(router: Router): void {
    router.add('POST', '/v1/tokens/exchange', {
      auth: 'none', body: TOKEN_EXCHANGE, forms: true, errorFormat: 'oauth',
      operationId: 'exchangeToken', tag: 'identity', summary: 'Exchange a workload\'s OIDC token for a proxy token (RFC 8693)',
      description: [
        'The OIDC token\'s signature (the issuer\'s keys from its OIDC discovery), `iss` (one of KEYWARD_OIDC_ISSUERS), `aud`, `exp` and `nbf` (60 s of skew) are checked, then a trust policy\'s subject and claims.',
        'With `policy_id`, that policy; without, the oldest matching policy, provided every match belongs to one organisation.',
        'The proxy token has the policy\'s credential, ttl (at most KEYWARD_MAX_TTL) and scopes. Refusals are RFC 6749\'s `{"error", "error_description"}`: `invalid_grant` for a token or policy that does not fit.',
      ].join('\n\n'),
      response: { status: 200, schema: TokenExchangeResponse, description: 'The proxy token.' },
    }, async (r) => ({ status: 200, body: await this.exchange.exchange(await r.body(), r.ip, r.requestId) }));
  }
}
