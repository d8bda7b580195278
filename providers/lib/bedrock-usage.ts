/**
 * Bedrock's usage reader, the built-in Bedrock provider's `usage` (written against @keyward/sdk alone, as any
 * provider's own reader is). A JSON response (Converse, InvokeModel, CountTokens) is read by the host's built-in
 * `bedrock` shape, Bedrock's JSON keys (Converse's `inputTokens`/`outputTokens`/`cacheReadInputTokens`/
 * `cacheWriteInputTokens` and the Anthropic-native keys of InvokeModel); the `x-amzn-bedrock-*-token-count`
 * headers, when present, win. Every Bedrock input count leaves out cache reads and writes; they are added, so
 * `inputTokens` is every input token (TokenUsage). A binary event stream (`application/vnd.amazon.eventstream`:
 * ConverseStream, InvokeModelWithResponseStream) is cut into frames by the AWS SDK's own splitter
 * (`getChunkedStream`), each frame checked by the codec (both CRCs): `metadata` frames carry Converse usage,
 * `chunk` frames carry base64 provider events whose last one holds `amazon-bedrock-invocationMetrics`; both are
 * read by the same JSON shape. Either frame, decoded whole, is the message's end (`final`): a stream cut before
 * it is not. Incremental across chunk edges; a frame longer than 16 MiB (AWS's limit) or a corrupt one stops the
 * reading, never the relay (the bytes pass unchanged either way).
 */
import { createRequire } from 'node:module';
import type { EventStreamCodec } from '@smithy/core/event-streams';
import type { TokenUsage, UsageReader, UsageReaderFactory, UsageResponse } from '@keyward/sdk';

/**
 * The AWS SDK's event-stream code, loaded by the first Bedrock event stream read (sync, from its CommonJS build):
 * @smithy/core costs ~10 ms at start, and most deployments never proxy Bedrock.
 */
let smithy: { codec: EventStreamCodec; getChunkedStream: typeof import('@smithy/core/event-streams').getChunkedStream; toUtf8: (b: Uint8Array) => string } | undefined;
function eventStreams(): NonNullable<typeof smithy> {
  if (!smithy) {
    const require = createRequire(import.meta.url);
    const es = require('@smithy/core/event-streams') as typeof import('@smithy/core/event-streams');
    const utf8 = require('@smithy/util-utf8') as typeof import('@smithy/util-utf8');
    smithy = { codec: new es.EventStreamCodec(utf8.toUtf8, utf8.fromUtf8), getChunkedStream: es.getChunkedStream, toUtf8: utf8.toUtf8 };
  }
  return smithy;
}

/** AWS event-stream messages are at most 16 MiB; a longer reported length is refused before anything is allocated. */
export const MAX_FRAME = 16 * 1024 * 1024;

const INVOCATION_METRICS = Buffer.from('"amazon-bedrock-invocationMetrics"');

const headerCount = (v: string | string[] | undefined): number | undefined => (typeof v === 'string' && /^\d{1,12}$/.test(v) ? Number(v) : undefined);

/**
 * The byte source getChunkedStream reads: chunks queued by `push`, handed over as it asks. It
 * also follows frame boundaries only far enough to see each frame's 4-byte total length, so an
 * oversized one stops the reading before the splitter allocates it.
 */
class FrameFeed implements AsyncIterable<Uint8Array> {
  private queue: Uint8Array[] = [];
  private waiting?: (r: IteratorResult<Uint8Array>) => void;
  private ended = false;
  /** Bytes left in the current frame; 0 at a boundary. */
  private left = 0;
  private prelude: number[] = [];

  /** False when a frame reports a length out of bounds (the feed ends). */
  push(chunk: Uint8Array): boolean {
    if (this.ended) return false;
    let at = 0;
    while (at < chunk.length) {
      if (this.left > 0) {
        const take = Math.min(this.left, chunk.length - at);
        this.left -= take;
        at += take;
        continue;
      }
      this.prelude.push(chunk[at++]!);
      if (this.prelude.length === 4) {
        const total = ((this.prelude[0]! << 24) >>> 0) + (this.prelude[1]! << 16) + (this.prelude[2]! << 8) + this.prelude[3]!;
        this.prelude = [];
        // 16 bytes: the smallest frame (prelude, its CRC, the message CRC).
        if (total < 16 || total > MAX_FRAME) {
          this.end();
          return false;
        }
        this.left = total - 4;
      }
    }
    this.deliver(chunk);
    return true;
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.waiting && this.queue.length === 0) {
      const w = this.waiting;
      this.waiting = undefined;
      w({ value: undefined, done: true });
    }
  }

  private deliver(chunk: Uint8Array): void {
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w({ value: chunk, done: false });
    } else this.queue.push(chunk);
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: () => {
        const value = this.queue.shift();
        if (value) return Promise.resolve({ value, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.waiting = resolve));
      },
    };
  }
}

/** Reads the event stream frame by frame; the JSON reader's counts grow as frames complete. */
class EventStreamUsage implements UsageReader {
  private readonly feed = new FrameFeed();
  private failed = false;
  /** The stream's end-of-message frame was decoded. */
  private ended = false;

  /** The JSON keys reader that `metadata` frames and the provider events inside `chunk` frames are scanned by. */
  private readonly inner: UsageReader;

  constructor(inner: UsageReader) {
    this.inner = inner;
    void this.read();
  }

  scan(chunk: Uint8Array): void {
    if (!this.failed && !this.feed.push(chunk)) this.failed = true;
  }

  end(): TokenUsage {
    this.feed.end();
    const counts = this.inner.end() ?? { inputTokens: 0, outputTokens: 0 };
    if (this.ended) counts.final = true;
    return counts;
  }

  private async read(): Promise<void> {
    try {
      for await (const frame of eventStreams().getChunkedStream(this.feed)) this.frame(frame);
    } catch {
      // A corrupt or truncated stream: what was read so far stands; the relay never knew.
      this.failed = true;
    }
  }

  private frame(frame: Uint8Array): void {
    const message = eventStreams().codec.decode(frame);
    if (message.headers[':message-type']?.value !== 'event') return;
    const event = message.headers[':event-type']?.value;
    if (event === 'metadata') {
      // ConverseStream's `{"usage":{inputTokens, outputTokens, cacheReadInputTokens, cacheWriteInputTokens}, "metrics":…}`:
      // the same keys as Converse's JSON, so the same scanner (which adds the cache counts to the input).
      this.inner.scan(Buffer.from(message.body));
      this.ended = true;
    } else if (event === 'chunk') {
      const bytes = (JSON.parse(eventStreams().toUtf8(message.body)) as { bytes?: unknown }).bytes;
      if (typeof bytes !== 'string') return;
      const inner = Buffer.from(bytes, 'base64');
      this.inner.scan(inner);
      // InvokeModelWithResponseStream's last event: the invocation's final counts.
      if (inner.includes(INVOCATION_METRICS)) this.ended = true;
    }
  }
}

/** A JSON body scanned by key; the model-agnostic count headers, when Bedrock sends them, win. */
class JsonUsage implements UsageReader {
  private readonly headers: UsageResponse['headers'];
  private readonly scanner: UsageReader;

  /** Erasable TypeScript (no parameter properties): Node strips this file's types as it is. */
  constructor(headers: UsageResponse['headers'], scanner: UsageReader) {
    this.headers = headers;
    this.scanner = scanner;
  }

  scan(chunk: Uint8Array): void {
    this.scanner.scan(chunk);
  }

  end(): TokenUsage {
    const counts = this.scanner.end() ?? { inputTokens: 0, outputTokens: 0 };
    const input = headerCount(this.headers['x-amzn-bedrock-input-token-count']);
    const output = headerCount(this.headers['x-amzn-bedrock-output-token-count']);
    const cached = headerCount(this.headers['x-amzn-bedrock-cache-read-input-token-count']) ?? counts.cachedInputTokens;
    const written = headerCount(this.headers['x-amzn-bedrock-cache-write-input-token-count']) ?? counts.cacheWriteInputTokens;
    if (cached !== undefined) counts.cachedInputTokens = cached;
    if (written !== undefined) counts.cacheWriteInputTokens = written;
    // The input header, like the body's counts, leaves the cache out.
    if (input !== undefined) counts.inputTokens = input + (cached ?? 0) + (written ?? 0);
    if (output !== undefined) counts.outputTokens = output;
    return counts;
  }
}

/** Bedrock's usage: the event stream's frames, or one JSON body, read by the host's `bedrock` JSON keys. */
export const bedrockUsage: UsageReaderFactory = (response, readers) => {
  const type = response.headers['content-type'];
  const stream = typeof type === 'string' && type.toLowerCase().startsWith('application/vnd.amazon.eventstream');
  const keys = readers.shape('bedrock', response);
  return stream ? new EventStreamUsage(keys) : new JsonUsage(response.headers, keys);
};
