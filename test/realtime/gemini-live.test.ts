/**
 * `@google/genai`'s `ai.live.connect`, unchanged but for a ptok and a base URL (it takes one: http → ws), through
 * the gateway to a fake Gemini Live that accepts only the stored key and answers in binary frames as Google
 * does. Text and audio both ways in order; the key goes upstream as x-goog-api-key, the ptok (sent as `?key=`)
 * never; the turn's spend is its usageMetadata at the Live model's text and audio prices.
 */
import test from 'ava';
import { GoogleGenAI, Modality, type LiveServerMessage } from '@google/genai';
import { priceEntry, usageCost } from '../../src/pricing/prices.js';
import { liveUsage } from '../../providers/lib/realtime/gemini-live.js';
import { shippedPrice } from '../support/shipped-prices.js';
import { realtimeFixture } from '../support/realtime-fixture.js';
import { eventually } from '../support/wait.js';

const MODEL = 'gemini-2.0-flash-live-001';

test('ai.live.connect through the gateway: setup, text and audio in order both ways, key upstream, spend = usage × price', async (t) => {
  const f = await realtimeFixture(t);
  const tok = await f.mint('gemini');
  const ai = new GoogleGenAI({ apiKey: tok.token, httpOptions: { baseUrl: `${f.origin}/v1/proxy` } });
  const messages: LiveServerMessage[] = [];
  let turnDone!: () => void;
  const turn = new Promise<void>((r) => (turnDone = r));
  const session = await ai.live.connect({
    model: MODEL,
    config: { responseModalities: [Modality.AUDIO] },
    callbacks: {
      onmessage: (m) => {
        messages.push(m);
        if (m.serverContent?.turnComplete) turnDone();
      },
      onerror: () => {},
      onclose: () => {},
    },
  });
  const pcm = Buffer.from('caller-pcm-16k').toString('base64');
  session.sendRealtimeInput({ audio: { data: pcm, mimeType: 'audio/pcm;rate=16000' } });
  await turn;
  session.close();

  const got = await f.fake.messages(0, 2);
  t.is(got[0]!.setup.model, `models/${MODEL}`);
  t.is(got[1]!.realtimeInput.audio.data, pcm, 'the caller\'s audio reached the provider unchanged');
  // Server messages in the order the fake sent them: setupComplete, text, audio, turnComplete.
  t.deepEqual(messages.map((m) => (m as any).seq), f.fake.sent[0]!.map((m) => m.seq));
  t.truthy(messages[0]!.setupComplete);
  t.is(messages[1]!.serverContent?.modelTurn?.parts?.[0]?.text, 'turn 1');
  t.is(Buffer.from(messages[2]!.serverContent!.modelTurn!.parts![0]!.inlineData!.data!, 'base64').toString(), 'gemini-audio');
  const hs = f.fake.handshakes[0]!;
  t.is(hs.headers['x-goog-api-key'], f.key);
  t.false(JSON.stringify(hs).includes('ptok_'), 'the ptok (the SDK sends it as ?key=) never reaches the provider');
  t.regex(new URL(hs.url, 'http://x').pathname, /^\/ws\/google\.ai\.generativelanguage\.v1(beta|alpha)?\.GenerativeService\.BidiGenerateContent$/);

  const price = priceEntry(MODEL, shippedPrice('gemini', MODEL), 'test');
  const expected = usageCost(price, liveUsage(f.fake.geminiUsage)!);
  // Counted when the session closes: a real event, waited for with a generous bound (a busy machine is slow).
  let u: Record<string, any> | undefined;
  await eventually(async () => {
    u = (await f.admin('GET', `/v1/tokens/${tok.id}`)).body.usage;
    return u?.requests === 1 && u.input_tokens === 800;
  }, 'the session\'s usage counted');
  t.is(u!.output_tokens, 300);
  t.is(Math.round(Number(u!.spend_usd) * 1e6), expected);
});
