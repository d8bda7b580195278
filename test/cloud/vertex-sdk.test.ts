/**
 * The official clients, unchanged, over real sockets through the gateway to the fake Vertex:
 * AnthropicVertex (an authClient sending `Bearer ptok_…`, baseURL `<gw>/v1/proxy/v1`) streaming,
 * GoogleGenAI in Vertex mode with its default apiVersion (v1beta1) streaming, with an authClient
 * and with `apiKey` (x-goog-api-key), and OpenAI on the OpenAI-compatible endpoint. Streamed text
 * arrives in pieces; upstream sees the minted Google token, never the proxy token.
 */
import test from 'ava';
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { LOCATION, PROJECT, vertexFixture, type VertexFixture } from '../support/cloud/google-fixture.js';
import { PIECES } from '../support/cloud/google-vertex.js';

const bearerClient = (token: string) => ({ getRequestHeaders: async () => new Headers({ authorization: `Bearer ${token}` }) });

function upstreamSawOnlyMintedTokens(t: import('ava').ExecutionContext, f: VertexFixture, proxyToken: string): void {
  t.true(f.vertex.received.length > 0);
  for (const r of f.vertex.received) {
    t.regex(String(r.headers.authorization), /^Bearer ya29\./);
    t.is(r.headers['x-goog-api-key'], undefined);
    t.false(JSON.stringify(r.headers).includes(proxyToken));
  }
}

test('AnthropicVertex streams through the gateway: rawPredict path, text in pieces, usage', async (t) => {
  const f = await vertexFixture(t);
  const client = new AnthropicVertex({ baseURL: `${f.app.url}/v1/proxy/v1`, region: LOCATION, projectId: PROJECT, authClient: bearerClient(f.tokens.sa.token) as never });
  const pieces: string[] = [];
  const stream = client.messages.stream({ model: 'claude-sonnet-4@20250514', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
  stream.on('text', (piece) => pieces.push(piece));
  const final = await stream.finalMessage();
  t.deepEqual(pieces, PIECES.slice(0, 2));
  t.deepEqual({ input: final.usage.input_tokens, output: final.usage.output_tokens }, { input: 10, output: 2 });
  const sent = f.vertex.received[0]!;
  t.is(sent.url, `/v1/projects/${PROJECT}/locations/${LOCATION}/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict`);
  t.is(JSON.parse(sent.body).stream, true);
  const plain = await client.messages.create({ model: 'claude-sonnet-4@20250514', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
  t.is((plain.content[0] as { text: string }).text, PIECES.join(''));
  upstreamSawOnlyMintedTokens(t, f, f.tokens.sa.token);
  t.is(f.google.mints, 1);
});

test('GoogleGenAI (Vertex mode, default apiVersion v1beta1, authClient) streams in pieces; apiKey mode sends x-goog-api-key', async (t) => {
  const f = await vertexFixture(t);
  const ai = new GoogleGenAI({
    vertexai: true, project: PROJECT, location: LOCATION,
    httpOptions: { baseUrl: `${f.app.url}/v1/proxy` },
    googleAuthOptions: { authClient: bearerClient(f.tokens.ambient.token) as never },
  });
  const pieces: string[] = [];
  let usage: { promptTokenCount?: number; candidatesTokenCount?: number } | undefined;
  for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi' })) {
    pieces.push(chunk.text ?? '');
    usage = chunk.usageMetadata ?? usage;
  }
  t.deepEqual(pieces, PIECES);
  t.deepEqual({ in: usage?.promptTokenCount, out: usage?.candidatesTokenCount }, { in: 7, out: 3 });
  t.is(f.vertex.received[0]!.url, `/v1beta1/projects/${PROJECT}/locations/${LOCATION}/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse`);

  const keyed = new GoogleGenAI({ vertexai: true, project: PROJECT, location: LOCATION, apiKey: f.tokens.ambient.token, httpOptions: { baseUrl: `${f.app.url}/v1/proxy` } });
  const res = await keyed.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
  t.is(res.text, PIECES.join(''));
  const counted = await keyed.models.countTokens({ model: 'gemini-2.5-flash', contents: 'hi' });
  t.is(counted.totalTokens, 5);
  upstreamSawOnlyMintedTokens(t, f, f.tokens.ambient.token);
  t.is(f.google.metadataMints, 1);
});

test('OpenAI client on Vertex\'s OpenAI-compatible endpoint', async (t) => {
  const f = await vertexFixture(t);
  const client = new OpenAI({ baseURL: `${f.app.url}/v1/proxy/v1/projects/${PROJECT}/locations/${LOCATION}/endpoints/openapi`, apiKey: f.tokens.sa.token });
  const r = await client.chat.completions.create({ model: 'google/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] });
  t.is(r.choices[0]!.message.content, PIECES.join(''));
  upstreamSawOnlyMintedTokens(t, f, f.tokens.sa.token);
});
