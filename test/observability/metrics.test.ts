import test from 'ava';
import { api } from '../support/app.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { quiet } from '../support/wait.js';

function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

test('GET /metrics needs no token and counts requests, refusals, latency, caches and key-wrapper calls', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_FREE_PROXY_REQUESTS: '3' } });
  for (let i = 0; i < 3; i++) {
    const r = await fetch(f.proxyUrl('v1/chat/completions'), { method: 'POST', headers: { 'x-proxy-token': f.tokens.openai.token, 'content-type': 'application/json' }, body: '{"model":"m","messages":[]}' });
    await r.text();
  }
  await (await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } })).text(); // 429 quota
  await (await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': 'ptok_bad' } })).text(); // 401
  await api(f.app, 'GET', '/v1/credentials', { token: f.org.token });
  await quiet(f.app);
  const res = await fetch(`${f.app.url}/metrics`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await res.text();
  t.is(sample(text, 'keyward_proxy_requests_total', { provider: 'openai', status: '200' }), 3);
  t.is(sample(text, 'keyward_proxy_requests_total', { provider: 'openai', status: '429' }), 1);
  t.is(sample(text, 'keyward_proxy_refusals_total', { code: 'quota_exceeded' }), 1);
  t.is(sample(text, 'keyward_proxy_refusals_total', { code: 'invalid_token' }), 1);
  t.is(sample(text, 'keyward_upstream_duration_seconds_count', { provider: 'openai' }), 3);
  t.is(sample(text, 'keyward_upstream_ttfb_seconds_count', { provider: 'openai' }), 3);
  t.true((sample(text, 'keyward_upstream_ttfb_seconds_sum', { provider: 'openai' }) ?? 0) > 0);
  t.true((sample(text, 'keyward_cache_requests_total', { cache: 'token', result: 'hit' }) ?? 0) >= 2);
  t.is(sample(text, 'keyward_cache_requests_total', { cache: 'key', result: 'miss' }), 1, 'the key was unwrapped once and then served from the cache');
  t.is(sample(text, 'keyward_kms_calls_total', { kind: 'local', op: 'unwrap', outcome: 'ok' }), 1);
  t.is(sample(text, 'keyward_kms_calls_total', { kind: 'local', op: 'wrap', outcome: 'ok' }), 3);
  t.is(sample(text, 'keyward_admin_requests_total', { method: 'GET', route: '/v1/credentials', status: '200' }), 1);
  t.truthy(sample(text, 'keyward_process_resident_memory_bytes'));
  for (const secret of [...Object.values(f.keys), f.tokens.openai.token, f.org.token]) t.false(text.includes(secret));
});

test('log lines carry trace correlation from traceparent and X-Cloud-Trace-Context', async (t) => {
  const f = await proxyFixture(t, { env: { GOOGLE_CLOUD_PROJECT: 'acme-prod' } });
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  await (await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token, traceparent: `00-${traceId}-00f067aa0ba902b7-01` } })).text();
  await api(f.app, 'GET', '/v1/credentials', { token: f.org.token, headers: { 'x-cloud-trace-context': `${traceId.replace('4bf', '5bf')}/123;o=1` } });
  await quiet(f.app);
  const proxyLine = f.app.logs.find((l) => l.message === 'proxy request')!;
  t.is(proxyLine['logging.googleapis.com/trace'], `projects/acme-prod/traces/${traceId}`);
  t.is(proxyLine['logging.googleapis.com/spanId'], '00f067aa0ba902b7');
  t.is(proxyLine['logging.googleapis.com/trace_sampled'], true);
  const adminLine = f.app.logs.filter((l) => l.message === 'admin request').at(-1)!;
  t.is(adminLine['logging.googleapis.com/trace'], `projects/acme-prod/traces/${traceId.replace('4bf', '5bf')}`);
  t.is(adminLine['logging.googleapis.com/spanId'], (123).toString(16).padStart(16, '0'));
  t.is(adminLine.severity, 'INFO');
  t.is((adminLine.httpRequest as any).status, 200);
});

test('KEYWARD_LOG_LEVEL filters lines', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_LOG_LEVEL: 'warn' } });
  await (await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } })).text();
  await quiet(f.app);
  t.false(f.app.logs.some((l) => l.message === 'proxy request'), 'info lines are filtered at warn');
  t.true(f.app.logs.every((l) => l.severity === 'WARNING' || l.severity === 'ERROR'));
});
