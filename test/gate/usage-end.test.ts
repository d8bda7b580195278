/**
 * The end of a provider's message, byte by byte (src/gateway/wire/usage-end.ts): for every streamed shape, a
 * reader fed any prefix of a whole answer, in any chunk size, says `final` exactly when the prefix holds
 * the event with the final usage whole (its closing blank line included). Markers inside generated text
 * (escaped) never count, nor do counts that came before the stop (Anthropic's message_start).
 */
import test from 'ava';
import { PROVIDER_READERS } from '../support/usage-readers.js';
import type { UsageShape } from '../../src/catalog/provider.js';
import { SHAPE_SPECS, type StreamShape } from '../support/billing-provider.js';

const tick = () => new Promise((r) => setImmediate(r));

const READER: Record<StreamShape, UsageShape> = {
  'anthropic': 'anthropic', 'openai-chat': 'openai', 'openai-responses': 'openai', 'gemini': 'gemini',
  'bedrock-converse': 'bedrock', 'bedrock-invoke': 'bedrock', 'vertex-anthropic': 'vertex', 'vertex-gemini': 'vertex',
};

async function finalAfter(shape: StreamShape, bytes: Buffer, size: number): Promise<boolean> {
  const spec = SHAPE_SPECS[shape];
  const reader = PROVIDER_READERS[READER[shape]]({ status: 200, path: spec.path, headers: { 'content-type': spec.contentType } });
  for (let i = 0; i < bytes.length; i += size) {
    reader.scan(bytes.subarray(i, i + size));
    if (shape.startsWith('bedrock')) await tick();
  }
  return reader.end()?.final === true;
}

for (const shape of Object.keys(SHAPE_SPECS) as StreamShape[]) {
  test(`${shape}: final exactly when the event with the final usage arrived whole, whatever the cut and the chunk sizes`, async (t) => {
    const spec = SHAPE_SPECS[shape];
    const events = spec.events(40, 123);
    const whole = Buffer.concat(events);
    const finalEnd = events.slice(0, spec.finalAt + 1).reduce((n, e) => n + e.length, 0);
    // Every cut point around the final event, and a spread of them before it, in several chunk sizes.
    const cuts = new Set<number>([0, whole.length]);
    for (let at = Math.max(0, finalEnd - 40); at <= Math.min(whole.length, finalEnd + 3); at++) cuts.add(at);
    for (let at = 0; at < finalEnd; at += 17) cuts.add(at);
    for (const cut of cuts) {
      for (const size of [1, 7, 64, 100_000]) {
        const final = await finalAfter(shape, whole.subarray(0, cut), size);
        t.is(final, cut >= finalEnd, `${shape}: cut at byte ${cut} of ${whole.length} (final event ends at ${finalEnd}), ${size}-byte chunks`);
      }
    }
  });
}

test('the end is looked for only where it decides something: a stream settled against a reservation (an unbudgeted stream, or one JSON body, pays nothing for it)', (t) => {
  const spec = SHAPE_SPECS.anthropic;
  const whole = Buffer.concat(spec.events(40, 123));
  const read = (response: { eventStream?: boolean; settles?: boolean }) => {
    const reader = PROVIDER_READERS.anthropic({ status: 200, path: spec.path, headers: {}, ...response });
    reader.scan(whole);
    return reader.end();
  };
  t.true(read({ eventStream: true, settles: true })?.final);
  t.true(read({})?.final, 'not known: looked for');
  t.is(read({ eventStream: true, settles: false })?.final, undefined, 'unbudgeted: not looked for');
  t.is(read({ eventStream: false, settles: true })?.final, undefined, 'one JSON body: its completeness decides, not the reader');
  t.is(read({ eventStream: true, settles: false })?.outputTokens, 123, 'the counts are read all the same');
});
