/**
 * What a provider declares about money (a model's prices as a price file writes them, its price dimensions, the
 * tools it bills on its side) and one response's token counts: declared once, in the SDK (sdk/src/prices.ts),
 * which outside authors import; the core reads the same types from there, so the two cannot drift.
 */
export type { AudioPrice, BilledTool, LongContextPrice, ModelPrice, PriceDimension, TierPrice, TokenUsage } from '../../sdk/src/prices.js';
