/**
 * The models requests name that the price book has no price of their own for
 * (neither their name nor a `prefix*`): so an operator sees what agents ask for
 * before a budget refuses it (`model_unpriced`) or a rule prices it
 * (`KEYWARD_UNPRICED=family_max`), and adds its price with KEYWARD_PRICES
 * without a release.
 *
 * Two views, both bounded whatever names callers send:
 * - `counts()`: provider → model → requests, for the metric
 *   `keyward_unpriced_requests_total{provider, model}` (the operator's view).
 *   The first PER_PROVIDER distinct names of a provider get a label of their
 *   own; any later one is counted under `(other)`. A name outside the model
 *   grammar (pricing/model-name.ts) is never a label.
 * - `list(orgId, providerId)`: what one organisation's requests named, with
 *   counts, first and last sighting and the rule that priced it (GET
 *   /v1/providers): never another organisation's names (a fine-tuned model's
 *   name can say whose it is). At most PER_ORG names per organisation and
 *   provider (later ones counted as `other`), and ORG_ENTRIES organisation ×
 *   provider lists (the least recently seen list is dropped first).
 *
 * A request of a priced model that set a price dimension to a tier the book does not price
 * (`service_tier: "priority"` where no Priority price is listed; price-dimensions.ts) is
 * counted too, under the price table's name for its model and the dimension's label
 * (`service_tier=priority`, a value no declaration names as `service_tier=(other)`): both
 * bounded by the provider files, never the caller's strings.
 *
 * In memory, per instance, since it started: the metric is the fleet's sum.
 * A priced request costs one price book check (a Map get, and a prefix scan
 * for names priced by a prefix).
 */
import { MODEL } from './model-name.js';
import type { PriceBook } from './prices.js';

export const OTHER = '(other)';
/** Between a model and a dimension's label in a `counts()` key (no model name or label holds it). */
export const DIMENSION = '\0';
const PER_PROVIDER = 64;
const PER_ORG = 32;
const ORG_ENTRIES = 2_000;

export interface UnpricedSighting {
  readonly model: string;
  readonly requests: number;
  readonly firstSeen: number;
  readonly lastSeen: number;
  /** The rule that priced it (`family_max:<family>`), or undefined: it had no price (refused under a budget). */
  readonly pricedAs: string | undefined;
}

interface OrgList {
  readonly models: Map<string, { requests: number; firstSeen: number; lastSeen: number }>;
  other: number;
}

export class UnpricedModels {
  private readonly metric = new Map<string, Map<string, number>>();
  /** `${orgId}\0${providerId}` → its list, least recently seen first. */
  private readonly orgs = new Map<string, OrgList>();

  constructor(private readonly prices: PriceBook, private readonly now: () => number) {}

  /** A request of `orgId` named `model` at `providerId` (undefined: it named none): noted when the book has no price of its own. */
  observe(orgId: string, providerId: string, model: string | undefined): void {
    if (model === undefined || this.prices.lists(providerId, model)) return;
    const named = MODEL.test(model) && !model.endsWith('*');
    let perModel = this.metric.get(providerId);
    if (!perModel) this.metric.set(providerId, (perModel = new Map()));
    const label = named && (perModel.has(model) || perModel.size < PER_PROVIDER) ? model : OTHER;
    perModel.set(label, (perModel.get(label) ?? 0) + 1);

    const key = `${orgId}\0${providerId}`;
    let list = this.orgs.get(key);
    if (list) this.orgs.delete(key); // re-inserted last: the Map's order is the lists' recency
    else list = { models: new Map(), other: 0 };
    this.orgs.set(key, list);
    if (this.orgs.size > ORG_ENTRIES) this.orgs.delete(this.orgs.keys().next().value!);
    const at = this.now();
    const seen = named ? list.models.get(model) : undefined;
    if (seen) {
      seen.requests += 1;
      seen.lastSeen = at;
    } else if (named && list.models.size < PER_ORG) {
      list.models.set(model, { requests: 1, firstSeen: at, lastSeen: at });
    } else {
      list.other += 1;
    }
  }

  /**
   * A request at `providerId` whose price dimension selected a tier the book does not price: `model` is the price
   * table's name for its model (or `unpriced`), `dimension` the choice's label (both bounded by the provider files).
   */
  observeDimension(providerId: string, model: string, dimension: string): void {
    let perModel = this.metric.get(providerId);
    if (!perModel) this.metric.set(providerId, (perModel = new Map()));
    const key = `${model}${DIMENSION}${dimension}`;
    perModel.set(key, (perModel.get(key) ?? 0) + 1);
  }

  /** Requests by provider and metric label: a model or `(other)`, or `model` DIMENSION `dimension` (observeDimension). */
  counts(): ReadonlyMap<string, ReadonlyMap<string, number>> {
    return this.metric;
  }

  /** What `orgId`'s requests named at `providerId`, most requested first, and how many more named others. */
  list(orgId: string, providerId: string): { models: UnpricedSighting[]; other: number } {
    const list = this.orgs.get(`${orgId}\0${providerId}`);
    if (!list) return { models: [], other: 0 };
    const models = [...list.models].map(([model, s]) => ({ model, ...s, pricedAs: this.prices.match(providerId, model)?.name }));
    models.sort((a, b) => b.requests - a.requests || a.model.localeCompare(b.model));
    return { models, other: list.other };
  }
}
