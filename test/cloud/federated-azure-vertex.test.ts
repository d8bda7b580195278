/**
 * Federated Azure OpenAI and Vertex credentials (no secret) through the official clients, unchanged:
 * `openai`'s AzureOpenAI (chat and stream) against an Entra app whose federated credential trusts
 * Keyward for the organisation; `@google/genai` in Vertex mode and `@anthropic-ai/vertex-sdk` against
 * a workload identity pool provider, with and without impersonating a service account. The fake
 * Entra ID and Google STS verify Keyward's JWT against the JWKS they fetch over HTTP; the fake Azure
 * and Vertex accept only the tokens those issued.
 */
import test from 'ava';
import { AzureOpenAI } from 'openai';
import { GoogleGenAI } from '@google/genai';
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import { PIECES as AZURE_PIECES } from '../support/cloud/azure-fake.js';
import { PIECES as VERTEX_PIECES } from '../support/cloud/google-vertex.js';
import { federationFixture, LOCATION, PROJECT } from '../support/cloud/federation-fixture.js';

const bearerClient = (token: string) => ({ getRequestHeaders: async () => new Headers({ authorization: `Bearer ${token}` }) });

test('AzureOpenAI chat and stream on a federated credential: one Entra grant, Bearer upstream, never an api-key', async (t) => {
  const f = await federationFixture(t);
  const cred = await f.credential(f.orgA, 'azure');
  const client = new AzureOpenAI({ endpoint: `${f.app.url}/v1/proxy`, apiKey: cred.token, apiVersion: '2024-10-21', deployment: 'my-gpt4o', maxRetries: 0 });
  const plain = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  t.is(plain.choices[0]!.message.content, AZURE_PIECES.join(''));
  const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true });
  const pieces: string[] = [];
  for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) pieces.push(chunk.choices[0].delta.content);
  t.deepEqual(pieces, AZURE_PIECES);
  t.is(f.entra.calls, 1);
  t.is(f.azure.refused.length, 0);
  const [token] = [...f.entra.tokens];
  for (const r of f.azure.received) {
    t.is(r.headers.authorization, `Bearer ${token}`);
    t.is(r.headers['api-key'], undefined);
  }
});

for (const cloud of ['vertex', 'vertex-sa'] as const) {
  test(`GoogleGenAI (Vertex mode) and AnthropicVertex on a federated credential (${cloud === 'vertex' ? 'the federated token itself' : 'impersonating a service account'})`, async (t) => {
    const f = await federationFixture(t);
    const cred = await f.credential(f.orgA, cloud);
    const ai = new GoogleGenAI({ vertexai: true, project: PROJECT, location: LOCATION, httpOptions: { baseUrl: `${f.app.url}/v1/proxy` }, googleAuthOptions: { authClient: bearerClient(cred.token) as never } });
    const pieces: string[] = [];
    for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi' })) pieces.push(chunk.text ?? '');
    t.deepEqual(pieces, VERTEX_PIECES);
    const anthropic = new AnthropicVertex({ baseURL: `${f.app.url}/v1/proxy/v1`, region: LOCATION, projectId: PROJECT, authClient: bearerClient(cred.token) as never });
    const streamed: string[] = [];
    const s = anthropic.messages.stream({ model: 'claude-sonnet-4@20250514', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
    s.on('text', (piece) => streamed.push(piece));
    await s.finalMessage();
    t.deepEqual(streamed, VERTEX_PIECES.slice(0, 2));
    t.is(f.google.exchanges, 1, 'one STS exchange for both clients');
    t.is(f.google.impersonations, cloud === 'vertex' ? 0 : 1);
    const sent = new Set(f.vertex.received.map((r) => r.headers.authorization));
    t.is(sent.size, 1);
    const bearer = [...sent][0]!.slice('Bearer '.length);
    t.is(f.google.federated.has(bearer), cloud === 'vertex', 'the federated token itself, or the service account\'s');
  });
}
