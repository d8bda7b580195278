/**
 * GET /v1/providers: the loaded providers, their credential fields (what a credential form needs), how their
 * SDKs are pointed here, the date of their prices and the unpriced models the caller's organisation named
 * (never another's).
 */
import { inject, injectable } from 'tsyringe';
import type { Static } from '@sinclair/typebox';
import type { ProviderRegistry } from '../catalog/registry.js';
import { PriceBook } from '../pricing/prices.js';
import { UnpricedModels } from '../pricing/unpriced-models.js';
import type { Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { EVERYONE } from '../vault/roles.js';
import { orgOf } from './params.js';
import { credentialDeclarations } from './schemas/credentials.js';
import { ProviderList } from './schemas/providers.js';

@injectable()
export class ProvidersApi {
  /** Built once at start: the providers do not change while the gateway runs. */
  private readonly list: Static<typeof ProviderList>;

  constructor(
    @inject(Symbols.ProviderRegistry) providers: ProviderRegistry,
    @inject(PriceBook) private readonly prices: PriceBook,
    @inject(UnpricedModels) private readonly unpriced: UnpricedModels,
  ) {
    const declarations = credentialDeclarations(providers);
    this.list = {
      object: 'list',
      has_more: false,
      data: providers.ids().map((id) => {
        const p = providers.get(id)!;
        const declared = declarations.get(id) ?? [];
        return {
          id,
          object: 'provider' as const,
          name: p.name ?? id,
          kind: p.kind,
          credential_fields: p.fields.map((f) => {
            const d = declared.find((x) => x.name === f.name)!;
            return {
              name: f.name, secret: f.secret, optional: f.optional, pattern: d.pattern, rule: d.must, max_length: f.maxLength,
              description: f.description ?? (f.secret ? 'The provider\'s key' : 'A plain credential field'),
              label: f.label, help: f.help ?? f.description ?? '', flag: f.flag === true,
            };
          }),
          pricing: { as_of: p.priceTable?.data.as_of ?? null, unpriced_rule: prices.unpriced, unpriced_models: [], unpriced_other_requests: 0 },
          sdk: (p.sdk ?? []).map((e) => ({ ...e, ...(e.env ? { env: { ...e.env } } : {}) })),
        };
      }),
    };
  }

  register(router: Router): void {
    router.add('GET', '/v1/providers', {
      // Every role: gateway-wide declarations, no organisation's data (a minter's console shows the SDK variables from them).
      auth: 'org', roles: EVERYONE, operationId: 'listProviders', tag: 'credentials', summary: 'List the providers and their credential fields',
      description: 'What POST /v1/credentials takes for each loaded provider: every field, secret or plain, optional or not, the pattern its value must match, its label and help for a form; and the environment variables (or code) that point its SDKs at this gateway.',
      response: { status: 200, schema: ProviderList, description: 'The loaded providers, by id.' },
    }, async (r) => ({ status: 200, body: this.forOrg(orgOf(r).id) }));
  }

  /** The list with `orgId`'s unpriced models filled in (a copy only for the providers it named some at). */
  private forOrg(orgId: string): Static<typeof ProviderList> {
    return {
      ...this.list,
      data: this.list.data.map((p) => {
        const seen = this.unpriced.list(orgId, p.id);
        if (seen.models.length === 0 && seen.other === 0) return p;
        const unpriced_models = seen.models.map((m) => ({
          model: m.model, requests: m.requests, first_seen: new Date(m.firstSeen).toISOString(), last_seen: new Date(m.lastSeen).toISOString(), priced_as: m.pricedAs ?? null,
        }));
        return { ...p, pricing: { ...p.pricing, unpriced_models, unpriced_other_requests: seen.other } };
      }),
    };
  }
}
