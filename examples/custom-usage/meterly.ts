/**
 * A model API whose responses report usage in a shape of their own, as a Keyward provider: Meterly answers
 * `{"text": …, "meter": {"in": 12, "out": 30}}`, and when it streams, its last server-sent event carries the
 * same `meter` object beside `"done": true`. No built-in shape knows `meter`, so the file brings its own usage
 * reader, written against @keyward/sdk alone: Keyward needs no change to read its usage and spend. Point
 * KEYWARD_PROVIDERS_DIR at this folder.
 *
 * The reader runs on every chunk of every response, so it stays cheap: a chunk is searched for the object's key
 * as bytes, and decoded only when it holds the key or continues one the previous chunk began.
 */
import type { ProviderPlugin, TokenUsage, UsageReader, UsageReaderFactory, UsageResponse } from '@keyward/sdk';

/** `"meter":{"in":N,"out":M}`, either order, spaces allowed; counts of at most 12 digits. */
const METER = /"meter"\s*:\s*\{\s*(?:"in"\s*:\s*(\d{1,12})\s*,\s*"out"\s*:\s*(\d{1,12})|"out"\s*:\s*(\d{1,12})\s*,\s*"in"\s*:\s*(\d{1,12}))\s*\}/g;
const KEY = '"meter"';
const KEY_BYTES = Buffer.from(KEY, 'latin1');
/** Enough text to hold a whole meter object: what is kept of a chunk that ends inside one. */
const OVERLAP = 96;

/** Whether `bytes` end with the start of the key (`"`, `"m`, … `"meter`): the next chunk may complete it. */
function endsInKey(bytes: Buffer): boolean {
  for (let n = Math.min(KEY_BYTES.length - 1, bytes.length); n > 0; n--) {
    if (bytes.compare(KEY_BYTES, 0, n, bytes.length - n) === 0) return true;
  }
  return false;
}

class MeterReader implements UsageReader {
  private readonly counts: TokenUsage = { inputTokens: 0, outputTokens: 0 };
  /** The end of the text read so far, while a meter object may be open in it (else empty). */
  private tail = '';
  private readonly stream: boolean;

  constructor(response: UsageResponse) {
    // Only a stream's meter is its message's end: a JSON body is final when whole, which Keyward itself knows.
    this.stream = response.eventStream !== false;
  }

  scan(chunk: Uint8Array): void {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength); // a view: nothing is copied
    // Most chunks of a stream hold no meter: one byte search, and nothing decoded.
    if (this.tail === '' && bytes.indexOf(KEY_BYTES) === -1) {
      if (endsInKey(bytes)) this.tail = bytes.toString('latin1', Math.max(0, bytes.length - KEY.length));
      return;
    }
    // latin1: one character per byte; the keys and digits are ASCII, so a cut UTF-8 character cannot matter.
    const text = this.tail + bytes.toString('latin1');
    METER.lastIndex = 0;
    for (let m = METER.exec(text); m !== null; m = METER.exec(text)) {
      // Cumulative counts: the last object read wins (one seen again across the seam changes nothing).
      this.counts.inputTokens = Number(m[1] ?? m[4]);
      this.counts.outputTokens = Number(m[2] ?? m[3]);
      if (this.stream) this.counts.final = true;
    }
    const rest = text.slice(-OVERLAP);
    this.tail = rest.includes(KEY) || endsInKey(Buffer.from(rest, 'latin1')) ? rest : '';
  }

  end(): TokenUsage {
    return this.counts;
  }
}

/** The host hands every factory its built-in shapes (`readers.shape('openai', response)`) too: this one needs none. */
export const meterUsage: UsageReaderFactory = (response) => new MeterReader(response);

export default {
  apiVersion: 1,
  id: 'meterly',
  name: 'Meterly',
  upstream: 'https://api.meterly.example',
  credential: { fields: { api_key: { secret: true, main: true, label: 'API key', help: 'A key from the Meterly dashboard.' } } },
  auth: { kind: 'header', header: 'authorization' },
  usage: meterUsage,
  routes: [{ method: 'POST', path: 'v1/generate' }],
  prices: {
    'meter-large': { input: 2, output: 10, maxOutput: 32768, contextWindow: 131072 },
  },
  pricesAsOf: '2026-11-01',
  pricesSource: 'https://meterly.example/pricing',
} satisfies ProviderPlugin;
