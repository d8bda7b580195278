/**
 * The browser form: `openai`'s OpenAIRealtimeWebSocket, bundled as a page would bundle it, in headless
 * Chromium, with a ptok and the gateway as its base URL. A browser cannot set headers on a WebSocket, so the
 * client offers the key as a subprotocol (`openai-insecure-api-key.<ptok>`) over `wss:` (it dials nothing
 * else): the gateway's own TLS, the test CA's certificate accepted by the browser context. The provider gets
 * the stored key as Bearer and never the ptok; the browser is answered `realtime`, the protocol it offered
 * that carries no key.
 */
import test from 'ava';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { ROOT } from '../support/app.js';
import { CHROMIUM } from '../support/browser.js';
import { realtimeFixture } from '../support/realtime-fixture.js';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

test('OpenAIRealtimeWebSocket in Chromium: the subprotocol offer with the ptok, audio and text both ways, the stored key upstream', async (t) => {
  const f = await realtimeFixture(t, { tls: true });
  const tok = await f.mint('openai');
  const bundle = await build({
    stdin: { contents: "import OpenAI from 'openai'; import { OpenAIRealtimeWebSocket } from 'openai/realtime/websocket'; window.KW = { OpenAI, OpenAIRealtimeWebSocket };", resolveDir: ROOT, loader: 'js' },
    bundle: true, format: 'iife', platform: 'browser', write: false, logLevel: 'silent',
  });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  t.teardown(() => browser.close());
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${f.origin}/healthz`);
  await page.addScriptTag({ content: bundle.outputFiles[0]!.text });
  const result = await page.evaluate(async ({ base, ptok }) => {
    const w = globalThis as unknown as { KW: { OpenAI: any; OpenAIRealtimeWebSocket: any } };
    const client = new w.KW.OpenAI({ apiKey: ptok, baseURL: base, dangerouslyAllowBrowser: true });
    const rt = new w.KW.OpenAIRealtimeWebSocket({ model: 'gpt-realtime', dangerouslyAllowBrowser: true }, client);
    const events: Array<{ type: string; seq: number; delta?: string }> = [];
    await new Promise((resolve, reject) => {
      rt.socket.addEventListener('open', resolve);
      rt.socket.addEventListener('close', (e: { code: number }) => reject(new Error(`closed ${e.code}`)));
    });
    const done = new Promise<void>((resolve) => rt.on('event', (e: any) => {
      events.push(e);
      if (e.type === 'response.done') resolve();
    }));
    rt.send({ type: 'input_audio_buffer.append', audio: (globalThis as unknown as { btoa(s: string): string }).btoa('browser-pcm') });
    rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'from the browser' }] } });
    rt.send({ type: 'response.create' });
    await done;
    const protocol = rt.socket.protocol;
    rt.close();
    return { events, protocol };
  }, { base: `${f.origin}/v1/proxy/v1`, ptok: tok.token });
  t.deepEqual(errors, []);
  t.is(result.protocol, 'realtime');
  t.deepEqual(result.events.map((e) => e.seq), f.fake.sent[0]!.slice(0, result.events.length).map((e) => e.seq), 'server events in order');
  t.true(result.events.some((e) => e.type === 'response.output_audio.delta'));
  const got = await f.fake.messages(0, 3);
  t.deepEqual(got.map((m) => m.type), ['input_audio_buffer.append', 'conversation.item.create', 'response.create']);
  t.is(Buffer.from(got[0]!.audio, 'base64').toString(), 'browser-pcm');
  const hs = f.fake.handshakes[0]!;
  t.is(hs.headers.authorization, `Bearer ${f.key}`);
  t.is(hs.protocol, 'realtime');
  t.false(JSON.stringify(hs).includes('ptok_'));
});
