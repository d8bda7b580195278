/**
 * Azure OpenAI (providers/azure.ts) with the official clients unchanged, over real sockets:
 * `openai`'s AzureOpenAI with `endpoint: <gw>/v1/proxy` and the ptok as `apiKey` (sent as
 * `api-key`) or from `azureADTokenProvider` (sent as Bearer), and the plain OpenAI client on the
 * version-less `openai/v1/` surface. The fake Azure resource (test/support/cloud/azure-fake.ts)
 * refuses any request that does not carry exactly `api-key: <stored key>` and no Authorization,
 * so every SDK call that succeeds proves the caller's credential was replaced, not added to.
 */
import test, { type ExecutionContext } from 'ava';
import OpenAI, { AzureOpenAI } from 'openai';
import { api, createOrg, mintToken, startApp, type Org, type TestApp } from '../support/app.js';
import { request } from '../support/request.js';
import { EMBEDDING_TOKENS, PIECES, RESPONSES_USAGE, USAGE, startFakeAzure, type FakeAzure } from '../support/cloud/azure-fake.js';
import { quiet } from '../support/wait.js';

const API_VERSION = '2024-10-21';

interface AzureFixture {
  app: TestApp;
  fake: FakeAzure;
  org: Org;
  key: string;
  credentialId: string;
  token: { id: string; token: string };
}

async function azureFixture(t: ExecutionContext): Promise<AzureFixture> {
  const key = `az-stored-key-${Math.random().toString(36).slice(2)}0123456789`;
  const fake = await startFakeAzure(key);
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_AZURE: fake.url } });
  const org = await createOrg(app);
  const made = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'azure', resource: 'my-res', api_key: key } });
  if (made.status !== 201) throw new Error(`credential create failed: ${made.status} ${made.text}`);
  const token = await mintToken(app, org, made.body.id);
  return { app, fake, org, key, credentialId: made.body.id, token };
}

/** Nothing the fake saw carries the ptok, and nothing was refused for its credential. */
function cleanUpstream(t: ExecutionContext, f: AzureFixture, ...callerSecrets: string[]): void {
  t.true(f.fake.received.length > 0);
  t.deepEqual(f.fake.refused.map((r) => r.url), []);
  for (const r of f.fake.received) {
    t.is(r.headers['api-key'], f.key);
    t.is(r.headers.authorization, undefined);
    for (const s of [f.token.token, ...callerSecrets]) t.false(JSON.stringify(r.rawHeaders).includes(s) || r.url.includes(s));
  }
}

const usageOf = async (f: AzureFixture) => {
  await quiet(f.app); // usage is recorded when the response closes
  return (await api(f.app, 'GET', `/v1/tokens/${f.token.id}`, { token: f.org.token })).body.usage;
};

test('AzureOpenAI unchanged: chat, streaming in pieces with usage, embeddings; api-key swapped, api-version kept', async (t) => {
  const f = await azureFixture(t);
  const client = new AzureOpenAI({ endpoint: `${f.app.url}/v1/proxy`, apiKey: f.token.token, apiVersion: API_VERSION, deployment: 'my-gpt4o', maxRetries: 0 });

  const plain = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  t.is(plain.choices[0]!.message.content, PIECES.join(''));

  const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
  const pieces: string[] = [];
  let streamedUsage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    const piece = chunk.choices[0]?.delta?.content;
    if (piece) pieces.push(piece);
    if (chunk.usage) streamedUsage = chunk.usage;
  }
  t.deepEqual(pieces, PIECES, 'the text arrives in its pieces, not buffered into one');
  t.is(streamedUsage?.completion_tokens, USAGE.completion_tokens);

  const emb = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hello', encoding_format: 'float' });
  t.deepEqual(emb.data[0]!.embedding, [0.25, -0.5, 1]);

  t.deepEqual(f.fake.received.map((r) => `${r.method} ${r.url}`), [
    `POST /openai/deployments/my-gpt4o/chat/completions?api-version=${API_VERSION}`,
    `POST /openai/deployments/my-gpt4o/chat/completions?api-version=${API_VERSION}`,
    `POST /openai/deployments/my-gpt4o/embeddings?api-version=${API_VERSION}`,
  ]);
  cleanUpstream(t, f);
  t.like(await usageOf(f), {
    requests: 3,
    input_tokens: 2 * USAGE.prompt_tokens + EMBEDDING_TOKENS,
    output_tokens: 2 * USAGE.completion_tokens,
  });
});

test('AzureOpenAI with azureADTokenProvider (Bearer ptok) and responses.create on openai/responses', async (t) => {
  const f = await azureFixture(t);
  const client = new AzureOpenAI({ endpoint: `${f.app.url}/v1/proxy`, azureADTokenProvider: async () => f.token.token, apiVersion: '2025-03-01-preview', maxRetries: 0 });
  const chat = await client.chat.completions.create({ model: 'dep-from-model', messages: [{ role: 'user', content: 'hi' }] });
  t.is(chat.choices[0]!.message.content, PIECES.join(''));
  const resp = await client.responses.create({ model: 'my-gpt4o', input: 'hi' });
  t.is(resp.output_text, PIECES.join(''));
  t.deepEqual(f.fake.received.map((r) => `${r.method} ${r.url}`), [
    'POST /openai/deployments/dep-from-model/chat/completions?api-version=2025-03-01-preview',
    'POST /openai/responses?api-version=2025-03-01-preview',
  ]);
  cleanUpstream(t, f);
  t.like(await usageOf(f), { requests: 2, input_tokens: USAGE.prompt_tokens + RESPONSES_USAGE.input_tokens, output_tokens: USAGE.completion_tokens + RESPONSES_USAGE.output_tokens });
});

test('the plain OpenAI client on the openai/v1/ surface with Bearer ptok: chat, stream, embeddings, responses, models', async (t) => {
  const f = await azureFixture(t);
  const client = new OpenAI({ baseURL: `${f.app.url}/v1/proxy/openai/v1/`, apiKey: f.token.token, maxRetries: 0 });
  t.is((await client.chat.completions.create({ model: 'my-gpt4o', messages: [{ role: 'user', content: 'hi' }] })).choices[0]!.message.content, PIECES.join(''));
  const pieces: string[] = [];
  for await (const c of await client.chat.completions.create({ model: 'my-gpt4o', messages: [], stream: true })) {
    if (c.choices[0]?.delta?.content) pieces.push(c.choices[0].delta.content);
  }
  t.deepEqual(pieces, PIECES);
  t.is((await client.embeddings.create({ model: 'emb', input: 'x', encoding_format: 'float' })).data.length, 1);
  t.is((await client.responses.create({ model: 'my-gpt4o', input: 'hi' })).output_text, PIECES.join(''));
  t.is((await client.models.list()).data[0]!.id, 'gpt-4o');
  t.deepEqual(f.fake.received.map((r) => `${r.method} ${r.url}`), [
    'POST /openai/v1/chat/completions',
    'POST /openai/v1/chat/completions',
    'POST /openai/v1/embeddings',
    'POST /openai/v1/responses',
    'GET /openai/v1/models',
  ]);
  cleanUpstream(t, f);
});

test('adversarial: the caller\'s own api-key or Bearer never reaches Azure, whichever carries the ptok', async (t) => {
  const f = await azureFixture(t);
  const own = 'caller-own-azure-key-0123456789abcdef';
  const url = `${f.app.url}/v1/proxy/openai/deployments/my-gpt4o/chat/completions?api-version=${API_VERSION}`;
  const body = JSON.stringify({ model: 'gpt-4o', messages: [] });
  // Forwarded with the stored key alone (the caller's extra key is stripped), or refused when two
  // api-key headers make the token unreadable: never the caller's key upstream.
  const attempts: Array<[Record<string, string>, number]> = [
    [{ 'api-key': f.token.token, authorization: `Bearer ${own}` }, 200],
    [{ authorization: `Bearer ${f.token.token}`, 'api-key': own }, 200],
    [{ 'x-proxy-token': f.token.token, 'api-key': own, authorization: `Bearer ${own}` }, 200],
    [{ 'api-key': f.token.token, 'Api-Key': own }, 401],
  ];
  for (const [headers, status] of attempts) {
    const r = await request(url, { headers, body });
    t.is(r.status, status, `${JSON.stringify(Object.keys(headers))}: ${r.text}`);
    t.false(r.text.includes(own));
  }
  t.is(f.fake.received.length, 3);
  cleanUpstream(t, f, own);
  t.false(f.app.logText().includes(own));
});

test('adversarial: the stored key is masked if Azure echoes it, and never logged', async (t) => {
  const f = await azureFixture(t);
  const r = await request(`${f.app.url}/v1/proxy/openai/deployments/my-gpt4o/chat/completions?api-version=${API_VERSION}`, {
    headers: { 'api-key': f.token.token, 'x-fake-echo': '1' },
    body: JSON.stringify({ model: 'gpt-4o', messages: [] }),
  });
  t.is(r.status, 200);
  t.true(r.text.includes('api-key'), 'the echo came back');
  t.false(r.text.includes(f.key));
  t.false(r.text.includes(f.key.slice(0, -4)), 'no part of it long enough to matter');
  t.false(f.app.logText().includes(f.key));
  const listed = await api(f.app, 'GET', `/v1/credentials/${f.credentialId}`, { token: f.org.token });
  t.is(listed.body.resource, 'my-res');
  t.false(listed.text.includes(f.key));
});

test('adversarial: resource is one DNS label, checked at create (no free-form host); a missing field is named', async (t) => {
  const f = await azureFixture(t);
  const before = (await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).body.data.length;
  const key = 'az-key-never-echoed-0123456789';
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ resource: 'evil.test/x' }, 'resource'],
    [{ resource: 'my-res.evil.test' }, 'resource'],
    [{ resource: 'evil.test#' }, 'resource'],
    [{ resource: 'user@evil' }, 'resource'],
    [{ resource: 'evil:443' }, 'resource'],
    [{ resource: 'https://evil.test' }, 'resource'],
    [{ resource: '-leading' }, 'resource'],
    [{ resource: 'trailing-' }, 'resource'],
    [{ resource: 'a'.repeat(64) }, 'resource'],
    [{ resource: 'my res' }, 'resource'],
    [{ resource: 'my-res\n' }, 'resource'],
    [{ resource: 7 }, 'resource'],
    [{}, 'resource'],
  ];
  for (const [fields, param] of bad) {
    const r = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body: { provider: 'azure', api_key: key, ...fields } });
    t.is(r.status, 400, JSON.stringify(fields));
    t.is(r.body.error.code, 'invalid_request');
    t.is(r.body.error.param, param, JSON.stringify(fields));
    t.false(r.text.includes(key));
  }
  const noKey = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body: { provider: 'azure', resource: 'my-res' } });
  t.is(noKey.body.error.param, 'api_key');
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).body.data.length, before, 'nothing was stored');
  const ok = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, body: { provider: 'azure', api_key: key, resource: 'A1-b' } });
  t.is(ok.status, 201, ok.text);
});

test('scopes: the deployment is the model a token is scoped to; stored responses are account routes', async (t) => {
  const f = await azureFixture(t);
  const scoped = await mintToken(f.app, f.org, f.credentialId, '15m', { models: ['my-gpt4o'] });
  const chat = (deployment: string, token: string) => request(`${f.app.url}/v1/proxy/openai/deployments/${deployment}/chat/completions?api-version=${API_VERSION}`, {
    headers: { 'api-key': token }, body: JSON.stringify({ model: 'my-gpt4o', messages: [] }),
  });
  t.is((await chat('my-gpt4o', scoped.token)).status, 200);
  const other = await chat('gpt-5-pro', scoped.token);
  t.is(other.status, 403, 'the body\'s model does not open another deployment');
  t.is(other.body.error.code, 'model_not_allowed');
  for (const path of ['openai/responses/resp_1', 'openai/v1/responses/resp_1']) {
    const r = await request(`${f.app.url}/v1/proxy/${path}?api-version=${API_VERSION}`, { method: 'GET', headers: { 'api-key': f.token.token } });
    t.is(r.status, 403, path);
    t.is(r.body.error.code, 'path_not_allowed');
  }
  const elsewhere = await request(`${f.app.url}/v1/proxy/openai/deployments/my-gpt4o/fine_tunes?api-version=${API_VERSION}`, { headers: { 'api-key': f.token.token }, body: '{}' });
  t.is(elsewhere.status, 403);
  t.is(f.fake.received.length, 1, 'only the allowed call reached Azure');
  cleanUpstream(t, f);
});

test.serial('AzureOpenAI from the environment alone: AZURE_OPENAI_ENDPOINT + AZURE_OPENAI_API_KEY (as docs/operate/providers.md says)', async (t) => {
  const f = await azureFixture(t);
  const names = ['AZURE_OPENAI_ENDPOINT', 'AZURE_OPENAI_API_KEY', 'OPENAI_API_VERSION', 'OPENAI_BASE_URL'] as const;
  const saved = names.map((n) => process.env[n]);
  Object.assign(process.env, { AZURE_OPENAI_ENDPOINT: `${f.app.url}/v1/proxy`, AZURE_OPENAI_API_KEY: f.token.token, OPENAI_API_VERSION: API_VERSION });
  delete process.env.OPENAI_BASE_URL;
  let client: AzureOpenAI;
  try {
    client = new AzureOpenAI({ deployment: 'my-gpt4o', maxRetries: 0 }); // the constructor reads the environment
  } finally {
    names.forEach((n, i) => (saved[i] === undefined ? delete process.env[n] : (process.env[n] = saved[i])));
  }
  const chat = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  t.is(chat.choices[0]!.message.content, PIECES.join(''));
  t.is(f.fake.received.at(-1)!.url, `/openai/deployments/my-gpt4o/chat/completions?api-version=${API_VERSION}`);
  cleanUpstream(t, f);
});
