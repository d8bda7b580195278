/**
 * The official `openai` SDK's Realtime client, unchanged but for a ptok and a base URL, through the gateway's
 * own TLS (OpenAIRealtimeWS dials only `wss:`) to a fake that accepts only the stored key: OpenAI, and Azure
 * through `.azure(...)`. Text and audio events relay both ways in order; the stored key goes upstream and the
 * proxy token never does; a message carrying the stored key reaches the caller masked; the session's spend is
 * the fake's reported usage at the price file's realtime prices (text and audio apart).
 */
import test from 'ava';
import OpenAI, { AzureOpenAI } from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { usageCost } from '../../src/pricing/prices.js';
import { priceEntry } from '../../src/pricing/prices.js';
import { realtimeUsage } from '../../providers/lib/realtime/openai-realtime.js';
import { shippedPrice } from '../support/shipped-prices.js';
import { realtimeFixture } from '../support/realtime-fixture.js';
import { eventually } from '../support/wait.js';

type Event = { type: string; seq?: number; [k: string]: any };

/** Collects every event of a realtime client until `until` matches. */
function collect(rt: OpenAIRealtimeWS, until: (e: Event) => boolean): { events: Event[]; done: Promise<Event[]> } {
  const events: Event[] = [];
  const done = new Promise<Event[]>((resolve, reject) => {
    rt.on('event', (e: Event) => {
      events.push(e);
      if (until(e)) resolve(events);
    });
    rt.on('error', (err) => reject(err));
  });
  return { events, done };
}

const audio = Buffer.from('caller-pcm16-audio').toString('base64');

test('OpenAIRealtimeWS (Node) over wss: text and audio both ways in order, stored key upstream, ptok never, masked, spend = usage × price', async (t) => {
  const f = await realtimeFixture(t, { tls: true });
  const tok = await f.mint('openai');
  const client = new OpenAI({ apiKey: tok.token, baseURL: `${f.origin}/v1/proxy/v1` });
  const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime', options: { ca: f.pki.ca } }, client);
  const { events, done } = collect(rt, (e) => e.type === 'response.done');
  await new Promise<void>((resolve, reject) => {
    rt.socket.once('open', () => resolve());
    rt.socket.once('error', reject);
  });
  const sent = [
    { type: 'session.update', session: { type: 'realtime', instructions: 'be brief' } },
    { type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'echo-key' }] } },
    { type: 'input_audio_buffer.append', audio },
    { type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] } },
    { type: 'response.create' },
  ];
  for (const e of sent) rt.send(e as never);
  await done;
  rt.close();

  // The fake got the client's events in the order sent, whole.
  const got = await f.fake.messages(0, sent.length);
  t.deepEqual(got.map((m) => m.type), sent.map((m) => m.type));
  t.is(got[2]!.audio, audio, 'the caller\'s audio reached the provider unchanged');
  // The caller got every server event, in the order the fake sent them (seq 1, 2, 3, …), audio deltas included.
  const seqs = events.map((e) => e.seq);
  t.deepEqual(seqs, f.fake.sent[0]!.slice(0, seqs.length).map((e) => e.seq));
  t.true(events.some((e) => e.type === 'response.output_audio.delta' && Buffer.from(e.delta, 'base64').toString() === 'pcm-audio-bytes'));
  t.true(events.some((e) => e.type === 'response.output_text.delta' && e.delta === 'Hello'));
  // Masked: the provider echoed the stored key; the caller saw stars of the same length.
  const echoed = events.find((e) => e.type === 'conversation.item.created' && String(e.item?.content?.[0]?.text).startsWith('your key is'))!;
  t.is(echoed.item.content[0].text, `your key is ${'*'.repeat(f.key.length)}`);
  // Upstream: the stored key as Bearer, the proxy token nowhere (headers, URL, subprotocols).
  const hs = f.fake.handshakes[0]!;
  t.is(hs.headers.authorization, `Bearer ${f.key}`);
  t.false(JSON.stringify(hs).includes('ptok_'));
  t.is(new URL(hs.url, 'http://x').searchParams.get('model'), 'gpt-realtime');

  // Spend: the fake's usage priced at gpt-realtime's text and audio prices, on the token.
  const price = priceEntry('gpt-realtime', shippedPrice('openai', 'gpt-realtime'), 'test');
  const expected = usageCost(price, realtimeUsage(f.fake.usage)!);
  t.true(expected > 0);
  // The session's request is counted when it ends (its exit); its response's spend when the response settled.
  await waitFor(async () => {
    const u = (await f.admin('GET', `/v1/tokens/${tok.id}`)).body.usage;
    return u?.spend_usd === usd(expected) && u.requests === 1;
  });
  const usage = (await f.admin('GET', `/v1/tokens/${tok.id}`)).body.usage;
  t.is(usage.input_tokens, 1000);
  t.is(usage.output_tokens, 500);
  t.is(usage.requests, 1, 'one request per session');
  t.false(f.app.logText().includes(tok.token), 'the proxy token is never logged');
  t.false(f.app.logText().includes(f.key), 'the stored key is never logged');
});

test('OpenAIRealtimeWS.azure(AzureOpenAI) over wss: api-key upstream, the deployment as the model', async (t) => {
  const f = await realtimeFixture(t, { tls: true });
  const tok = await f.mint('azure');
  const client = new AzureOpenAI({ apiKey: tok.token, endpoint: `${f.origin}/v1/proxy`, apiVersion: '2025-04-01-preview', deployment: 'my-realtime' });
  const rt = await OpenAIRealtimeWS.azure(client, { options: { ca: f.pki.ca } });
  const { done } = collect(rt, (e) => e.type === 'response.done');
  await new Promise<void>((resolve, reject) => {
    rt.socket.once('open', () => resolve());
    rt.socket.once('error', reject);
  });
  rt.send({ type: 'response.create' } as never);
  const events = await done;
  rt.close();
  t.deepEqual(events.map((e) => e.type), ['session.created', 'response.created', 'response.output_text.delta', 'response.output_audio.delta', 'response.done']);
  const hs = f.fake.handshakes[0]!;
  t.is(hs.headers['api-key'], f.key);
  t.is(hs.headers.authorization, undefined);
  t.false(JSON.stringify(hs).includes('ptok_'));
  const url = new URL(hs.url, 'http://x');
  t.is(url.pathname, '/openai/realtime');
  t.is(url.searchParams.get('deployment'), 'my-realtime');
  t.is(url.searchParams.get('api-version'), '2025-04-01-preview');
});

function usd(micros: number): string {
  const whole = Math.floor(micros / 1e6);
  const fraction = String(micros % 1e6).padStart(6, '0').replace(/0{1,4}$/, '');
  return `${whole}.${fraction}`;
}

/** A session's settlement is a real event (after it closes): waited for with a generous bound, a busy machine is slow. */
const waitFor = (check: () => Promise<boolean>): Promise<number> => eventually(check, 'the session\'s usage');
