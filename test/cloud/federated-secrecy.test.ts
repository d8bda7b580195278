/**
 * What Keyward mints for a federated credential is a secret like a stored key: the JWTs it signs,
 * AWS temporary credentials, Entra and Google access tokens. After requests on every cloud (streams
 * included, a refused exchange included, and upstreams that echo what they were sent), none of them
 * is in any response (headers or body), log line, exported span, /metrics, or store file — searched
 * for byte for byte.
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { api } from '../support/app.js';
import { federationFixture } from '../support/cloud/federation-fixture.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';

test('no minted JWT, temporary credential or access token in any response, log line, span, metric or store file', async (t) => {
  const otlp = await startOtlpReceiver();
  t.teardown(() => otlp.close());
  const f = await federationFixture(t, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } });
  const seen: string[] = [];
  const send = async (url: string, init: RequestInit) => {
    const res = await fetch(url, init);
    seen.push(JSON.stringify([...res.headers]), await res.text());
    return res.status;
  };
  const json = (token: string, body: unknown, extra: Record<string, string> = {}) => ({
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...extra }, body: JSON.stringify(body),
  });
  const bedrock = await f.credential(f.orgA, 'bedrock');
  const azure = await f.credential(f.orgA, 'azure');
  const vertex = await f.credential(f.orgA, 'vertex');
  const vertexSa = await f.credential(f.orgA, 'vertex-sa');
  const refused = await f.credential(f.orgB, 'bedrock');
  const model = 'model/anthropic.claude-3-5-sonnet-20240620-v1:0';
  const converse = { messages: [{ role: 'user', content: [{ text: 'hi' }] }] };
  const gemini = 'v1/projects/my-proj-123/locations/us-central1/publishers/google/models/gemini-2.5-flash';
  const chat = { messages: [{ role: 'user', content: 'hi' }] };

  t.is(await send(f.proxyUrl(`${model}/converse`), json(bedrock.token, converse)), 200);
  t.is(await send(f.proxyUrl(`${model}/converse-stream`), json(bedrock.token, converse)), 200);
  t.is(await send(f.proxyUrl('openai/deployments/d/chat/completions?api-version=2024-10-21'), json(azure.token, { ...chat, stream: true })), 200);
  for (const tok of [vertex.token, vertexSa.token]) {
    t.is(await send(f.proxyUrl(`${gemini}:generateContent`), json(tok, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] })), 200);
    t.is(await send(f.proxyUrl(`${gemini}:streamGenerateContent?alt=sse`), json(tok, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] })), 200);
  }
  t.is(await send(f.proxyUrl(`${model}/converse`), json(refused.token, converse)), 502);
  // Upstreams that echo what they hold: the fake Bedrock its keys (the temporary ones), Azure the headers it got, Vertex the tokens.
  f.bedrock.echo = true;
  const masked = () => t.true(seen.at(-1)!.includes('*'.repeat(20)), 'the echo was masked, not absent');
  t.is(await send(f.proxyUrl(`${model}/converse`), json(bedrock.token, converse)), 200);
  masked();
  t.is(await send(f.proxyUrl('openai/deployments/d/chat/completions?api-version=2024-10-21'), json(azure.token, chat, { 'x-fake-echo': '1' })), 200);
  masked();
  // What Vertex was sent for the impersonating credential: the service account's token.
  f.vertex.echo.push(...[...f.issued.all].filter((token) => token.startsWith('ya29.sa-')));
  t.is(await send(f.proxyUrl(`${gemini}:generateContent`), json(vertexSa.token, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] })), 200);
  masked();

  const metrics = (await api(f.app, 'GET', '/metrics')).text;
  await f.app.stop(); // flushes spans and usage
  const secrets = {
    jwt: [...f.sts.jwts, ...f.entra.assertions, ...f.google.subjectTokens],
    aws: f.sts.issued.flatMap((c) => [c.accessKeyId, c.secretAccessKey, c.sessionToken]),
    entra: [...f.entra.tokens],
    google: [...f.issued.all],
  };
  t.true(secrets.jwt.length >= 5 && secrets.aws.length >= 3 && secrets.entra.length >= 1 && secrets.google.length >= 3, JSON.stringify(Object.values(secrets).map((s) => s.length)));
  const storeFiles = readdirSync(f.app.dataDir).filter((n) => n.startsWith('keyward.db')).map((n) => readFileSync(path.join(f.app.dataDir, n)).toString('latin1'));
  t.true(storeFiles.length >= 1);
  const places: Record<string, string> = {
    responses: seen.join('\n'),
    logs: f.app.logText(),
    spans: otlp.exports.map((e) => e.body).join('\n'),
    metrics,
    store: storeFiles.join('\n'),
  };
  t.true(places.spans!.length > 0, 'spans were exported');
  t.true(places.logs!.includes('could not be minted'), 'the refusal was logged');
  for (const [kind, values] of Object.entries(secrets)) {
    for (const value of values) {
      for (const [where, text] of Object.entries(places)) t.false(text.includes(value), `a ${kind} value in the ${where}`);
    }
  }
});
