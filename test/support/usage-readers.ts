/**
 * The usage reader each built-in provider uses, by the shape name tests know it by: the core's built-in shapes,
 * except `bedrock`, which is the Bedrock provider's own reader (providers/lib/bedrock-usage.ts: its count headers
 * and AWS's event stream around the core's `bedrock` JSON keys), handed the host's shapes as the gateway hands them.
 */
import type { UsageReader, UsageResponse, UsageShape } from '../../src/catalog/provider.js';
import { BUILT_IN_READERS, USAGE_READERS } from '../../src/gateway/wire/usage-scanner.js';
import { bedrockUsage } from '../../providers/lib/bedrock-usage.js';

export const PROVIDER_READERS: Readonly<Record<UsageShape, (response: UsageResponse) => UsageReader>> = Object.freeze({
  ...BUILT_IN_READERS,
  bedrock: (response: UsageResponse) => bedrockUsage(response, USAGE_READERS),
});
