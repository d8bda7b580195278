/**
 * What realtime input-audio transcription costs: a transcription model's price
 * (pricing/prices.ts) turned into the worst case of a chunk of appended audio
 * and of one transcription item, and the cost of what the provider reported.
 * Anything missing for a bound (the route's audio-token rate, the model, its
 * price, its largest output) is 400 `price_unknown`, naming what is missing.
 * The book that holds these is transcription.ts.
 */
import { Errors } from '../../errors.js';
import { usageCost, worstCaseCost, type PriceEntry } from '../../pricing/prices.js';
import { INPUT_OVERHEAD_TOKENS } from '../../pricing/spend-bound.js';
import type { TranscriptionPrice } from '../../../sdk/src/realtime.js';

/** What the provider reported for one transcription, and one transcription model's bounds and costs (as the SDK declares them). */
export type { TranscriptionPrice, TranscriptionUsage } from '../../../sdk/src/realtime.js';

const unknownPrice = (what: string) => Errors.priceUnknown(`Under a cap, realtime transcription must be priced: ${what}. Nothing was forwarded.`);

/**
 * The bounds and costs of transcribing with `model` at `entry`, audio counted at most `tokensPerSecond`; throws
 * 400 price_unknown (naming the field and value) when the model, its price or a bound is missing.
 */
export function transcriptionPrice(model: string | undefined, entry: PriceEntry | undefined, tokensPerSecond: number | undefined): TranscriptionPrice {
  if (tokensPerSecond === undefined) throw unknownPrice('this route declares no input-audio token rate (`inputAudioTokensPerSecond`)');
  if (model === undefined) throw unknownPrice('the session names no transcription model (`input_audio_transcription.model` / `audio.input.transcription.model`)');
  if (!entry) throw unknownPrice(`the transcription model ${JSON.stringify(model)} has no price (KEYWARD_PRICES)`);
  const byTokens = entry.input > 0 || entry.output > 0 || (entry.audio !== undefined && (entry.audio.input > 0 || entry.audio.output > 0));
  if (byTokens && entry.maxOutput === undefined) throw unknownPrice(`the transcription model ${JSON.stringify(model)} has no largest output (\`maxOutput\`) to bound its transcript`);
  const perSecond = entry.perAudioSecond ?? 0;
  const secondsCost = (seconds: number) => Math.ceil(Math.max(0, seconds) * perSecond);
  const audioTokens = (seconds: number) => Math.ceil(Math.max(0, seconds) * tokensPerSecond);
  return {
    model,
    audio(seconds) {
      const tokens = audioTokens(seconds);
      return { inputTokens: tokens, outputTokens: 0, micros: (byTokens ? worstCaseCost(entry, tokens, 0) : 0) + secondsCost(seconds) };
    },
    item(promptBytes) {
      if (!byTokens) return { inputTokens: 0, outputTokens: 0, micros: secondsCost(1) };
      const input = Math.min(promptBytes + INPUT_OVERHEAD_TOKENS, entry.contextWindow ?? Number.MAX_SAFE_INTEGER);
      return { inputTokens: input, outputTokens: entry.maxOutput!, micros: worstCaseCost(entry, input, entry.maxOutput!) + secondsCost(1) };
    },
    cost(u) {
      if (u.kind === 'duration') return entry.perAudioSecond === undefined ? undefined : { micros: secondsCost(u.seconds), tokens: audioTokens(u.seconds) };
      if (!byTokens || entry.perAudioSecond !== undefined) return undefined;
      return { micros: usageCost(entry, u.usage), tokens: u.usage.inputTokens + u.usage.outputTokens };
    },
  };
}
