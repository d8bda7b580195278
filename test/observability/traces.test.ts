import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { ADMIN_TOKEN, mintToken } from '../support/app.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { loadConfig, pluginConfig, ConfigError } from '../../src/settings/config.js';
import { genAiOperation, genAiProviderName } from '../../src/telemetry/gen-ai.js';

const SERVER = 2;
const CLIENT = 3;

async function receiver(t: ExecutionContext, status = 200): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver(status);
  t.teardown(() => r.close());
  return r;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

test('a proxied request is one span with the GenAI attributes and Keyward ids, the caller\'s traceparent its parent, store and KMS calls its children, and no secret anywhere', async (t) => {
  const otlp = await receiver(t);
  const collectorSecret = `collector-secret-${hex(8)}`;
  const f = await proxyFixture(t, {
    env: {
      // The general endpoint gets /v1/traces appended to its own path.
      OTEL_EXPORTER_OTLP_ENDPOINT: `${otlp.url}/collector/`,
      OTEL_SERVICE_NAME: 'keyward-under-test',
      OTEL_EXPORTER_OTLP_HEADERS: `x-collector-auth=${encodeURIComponent(collectorSecret + ' ok')}`,
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    },
  });
  // Keyward knows the model when it reads it: a token whose scopes name models (the body's `model`), or a path that carries it.
  const scoped = await mintToken(f.app, f.org, f.credentials.openai, '15m', { models: ['gpt-4o*'] });
  const traceId = hex(16);
  const callerSpanId = hex(8);
  const res = await fetch(f.proxyUrl('v1/chat/completions'), {
    method: 'POST',
    headers: { authorization: `Bearer ${scoped.token}`, 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpanId}-01` },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.is(res.status, 200);
  const streamed = await res.text();
  t.true(streamed.includes('[DONE]'));
  const requestId = res.headers.get('x-keyward-request-id')!;

  const gemini = await fetch(f.proxyUrl('v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse'), {
    method: 'POST',
    headers: { 'x-goog-api-key': f.tokens.gemini.token, 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  });
  t.is(gemini.status, 200);
  const geminiId = gemini.headers.get('x-keyward-request-id')!;
  await gemini.text();

  // A refused request (a token that does not exist) is a span too, with its status and error code, not its token.
  const badToken = `ptok_${hex(20)}`;
  const refused = await fetch(f.proxyUrl('v1/models'), { headers: { authorization: `Bearer ${badToken}` } });
  t.is(refused.status, 401);
  const refusedId = refused.headers.get('x-keyward-request-id')!;
  await refused.text();

  await f.app.stop(); // shutdown exports what the batch processor holds
  t.true(otlp.exports.length > 0, 'spans were exported');
  for (const e of otlp.exports) {
    t.is(e.path, '/collector/v1/traces');
    t.is(e.headers['x-collector-auth'], `${collectorSecret} ok`, 'OTEL_EXPORTER_OTLP_HEADERS reach the collector');
    t.regex(String(e.headers['content-type']), /^application\/json/);
  }
  const spans = otlp.spans();
  const byRequest = (id: string): ReceivedSpan[] => spans.filter((s) => s.attributes['keyward.request_id'] === id);

  t.is(byRequest(requestId).length, 1, 'one span per proxied request');
  const span = byRequest(requestId)[0]!;
  t.is(span.kind, SERVER);
  t.is(span.traceId, traceId, 'the caller\'s trace');
  t.is(span.parentSpanId, callerSpanId, 'the caller\'s span is the parent');
  t.is(span.name, 'chat gpt-4o-mini');
  t.like(span.attributes, {
    'gen_ai.provider.name': 'openai',
    'gen_ai.system': 'openai',
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': 'gpt-4o-mini',
    'gen_ai.usage.input_tokens': 11,
    'gen_ai.usage.output_tokens': 3,
    'http.response.status_code': 200,
    'http.route': '/v1/proxy/v1/chat/completions',
    'keyward.org_id': f.org.id,
    'keyward.credential_id': f.credentials.openai,
    'keyward.token_id': scoped.id,
    'keyward.provider': 'openai',
    'keyward.forwarded': true,
  });
  t.like(span.resource, { 'service.name': 'keyward-under-test', 'deployment.environment.name': 'test' });

  const geminiSpan = byRequest(geminiId)[0];
  t.is(geminiSpan?.name, 'generate_content gemini-2.0-flash');
  t.like(geminiSpan?.attributes, { 'gen_ai.provider.name': 'gcp.gemini', 'gen_ai.operation.name': 'generate_content', 'gen_ai.request.model': 'gemini-2.0-flash', 'gen_ai.usage.input_tokens': 17, 'gen_ai.usage.output_tokens': 3 });

  // The first use of the token and the key: the store lookup and the key unwrap, inside the request's trace.
  const children = spans.filter((s) => s.parentSpanId === span.spanId);
  const lookup = children.find((s) => s.name === 'store.findTokenByHash');
  t.truthy(lookup, `store lookup under the request span; children: ${children.map((s) => s.name).join(', ')}`);
  t.is(lookup?.kind, CLIENT);
  t.is(lookup?.traceId, traceId);
  t.like(lookup?.attributes, { 'db.system.name': 'sqlite', 'db.operation.name': 'findTokenByHash' });
  const unwrap = children.find((s) => s.name === 'kms.unwrap');
  t.truthy(unwrap, 'the KMS unwrap under the request span');
  t.like(unwrap?.attributes, { 'keyward.kms.kind': 'local', 'keyward.kms.operation': 'unwrap' });

  // A store call made for no proxied request (the admin API creating the org) is a root span of its own.
  const createOrg = spans.find((s) => s.name === 'store.createOrg');
  t.truthy(createOrg);
  t.is(createOrg?.parentSpanId, '');

  const refusedSpan = byRequest(refusedId)[0];
  t.truthy(refusedSpan);
  t.like(refusedSpan?.attributes, { 'http.response.status_code': 401, 'keyward.error_code': 'invalid_token', 'keyward.forwarded': false });
  t.is(refusedSpan?.parentSpanId, '', 'no traceparent: a root span');

  // Never a key, a token or the collector's header in what was exported (attributes, resource, names).
  const exported = otlp.exports.map((e) => e.body).join('\n');
  for (const secret of [...Object.values(f.keys), ...Object.values(f.tokens).map((x) => x.token), scoped.token, f.org.token, ADMIN_TOKEN, badToken, collectorSecret]) {
    t.false(exported.includes(secret), 'a secret was exported');
  }
  t.false(f.app.logText().includes(collectorSecret), 'the collector header is never logged');
});

test('a collector that refuses spans costs one warning, not a request or the shutdown', async (t) => {
  const otlp = await receiver(t, 400);
  const f = await proxyFixture(t, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } });
  for (let i = 0; i < 3; i++) {
    const res = await fetch(f.proxyUrl('v1/models'), { headers: { authorization: `Bearer ${f.tokens.openai.token}` } });
    t.is(res.status, 200);
    await res.text();
  }
  await f.app.stop(); // resolves: the refused export is not a failed shutdown
  t.true(otlp.exports.length > 0, 'the export was tried');
  const warnings = f.app.logs.filter((l) => l.message === 'trace export failed');
  t.is(warnings.length, 1, 'logged once, not per batch');
  t.is(warnings[0]!.severity, 'WARNING');
});

test('sampling: by default the caller\'s unsampled flag is followed; OTEL_TRACES_SAMPLER=always_on traces such a request anyway, in the caller\'s trace', async (t) => {
  const unsampled = async (sampler: string | undefined) => {
    const otlp = await receiver(t);
    const f = await proxyFixture(t, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, ...(sampler ? { OTEL_TRACES_SAMPLER: sampler } : {}) } });
    const traceId = hex(16);
    const res = await fetch(f.proxyUrl('v1/models'), { headers: { authorization: `Bearer ${f.tokens.openai.token}`, traceparent: `00-${traceId}-${hex(8)}-00` } });
    t.is(res.status, 200);
    await res.text();
    await f.app.stop();
    return { traceId, spans: otlp.spans().filter((s) => s.attributes['keyward.request_id'] === res.headers.get('x-keyward-request-id')) };
  };
  t.deepEqual((await unsampled(undefined)).spans, [], 'parentbased_always_on: an unsampled caller, no span');
  const { traceId, spans: forced } = await unsampled('always_on');
  t.is(forced.length, 1);
  t.is(forced[0]!.traceId, traceId);
  t.is(forced[0]!.attributes['http.route'], '/v1/proxy/v1/models');
});

test('the OTEL_* variables are checked at start-up, and the exporter\'s headers are never echoed', (t) => {
  const base = { KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN };
  t.is(loadConfig(base).traces, undefined);
  const on = loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'https://telemetry.googleapis.com' });
  t.is(on.traces?.url, 'https://telemetry.googleapis.com/v1/traces');
  t.is(on.traces?.serviceName, 'keyward');
  const signal = loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom', OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=2', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=3' });
  t.is(signal.traces?.url, 'http://b:4318/custom', 'the traces endpoint is used as given');
  t.deepEqual(signal.traces?.headers, { a: '1', b: '3' });
  t.is(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_SDK_DISABLED: 'true' }).traces, undefined);
  t.like(on.traces, { sampler: 'parentbased_always_on', samplerRatio: 1 });
  t.like(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).traces, { sampler: 'parentbased_traceidratio', samplerRatio: 0.25 });
  t.throws(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_SAMPLER: 'jaeger_remote' }), { message: /^OTEL_TRACES_SAMPLER: expected one of always_on/ });
  t.throws(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_SAMPLER_ARG: '1.5' }), { message: /^OTEL_TRACES_SAMPLER_ARG: / });

  const bad = t.throws(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://user:hunter2@collector' }), { instanceOf: ConfigError });
  t.regex(bad.message, /^OTEL_EXPORTER_OTLP_ENDPOINT: expected an http\(s\) URL/);
  t.false(bad.message.includes('hunter2'));
  const badHeaders = t.throws(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20sekrit,broken' }), { instanceOf: ConfigError });
  t.regex(badHeaders.message, /^OTEL_EXPORTER_OTLP_HEADERS: /);
  t.false(badHeaders.message.includes('sekrit'));
  t.false('traces' in pluginConfig(on), 'a plugin never sees the exporter\'s headers');
});

test('GenAI names: providers map to the registry\'s well-known values, routes to the operation they perform', (t) => {
  t.is(genAiProviderName('gemini'), 'gcp.gemini');
  t.is(genAiProviderName('bedrock'), 'aws.bedrock');
  t.is(genAiProviderName('mistral'), 'mistral_ai');
  t.is(genAiProviderName('fireworks'), 'fireworks', 'no registry value: the provider id');
  const cases: Array<[string, string | undefined]> = [
    ['v1/chat/completions', 'chat'],
    ['openai/deployments/{model}/chat/completions', 'chat'],
    ['v1/completions', 'text_completion'],
    ['v1/responses', 'chat'],
    ['v1/messages', 'chat'],
    ['v2/chat', 'chat'],
    ['model/{model}/converse-stream', 'chat'],
    ['model/{model}/invoke', 'text_completion'],
    ['v1/embeddings', 'embeddings'],
    ['v2/embed', 'embeddings'],
    ['v1beta/models/{model}:streamGenerateContent', 'generate_content'],
    ['v1beta/models/{model}:batchEmbedContents', 'embeddings'],
    ['v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:streamRawPredict', 'chat'],
    ['v1/models', undefined],
    ['v1/messages/count_tokens', undefined],
    ['v1/projects/{project}/locations/{location}/publishers/{publisher}/models/count-tokens:rawPredict', undefined],
    ['v1beta/models/{model}:countTokens', undefined],
    ['model/{model}/count-tokens', undefined],
    ['v1/responses/input_tokens', undefined],
    ['v1/responses/{id}', undefined],
  ];
  for (const [route, operation] of cases) t.is(genAiOperation(route), operation, route);
});
