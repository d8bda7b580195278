import test from 'ava';
import { registerHooks } from 'node:module';

// Every module this worker resolves from now on, with who asked: registered before the app is imported, so a
// static import of an OpenTelemetry package anywhere in the server's module graph would show here.
const resolved: Array<{ specifier: string; parent: string }> = [];
registerHooks({
  resolve(specifier, context, next) {
    resolved.push({ specifier, parent: context.parentURL ?? '' });
    return next(specifier, context);
  },
});
const ROOT = new URL('../..', import.meta.url).href;
/**
 * OpenTelemetry modules Keyward's own files import, and the SDK's packages whoever imports them. (prom-client
 * probes for `@opentelemetry/api` on its own, for exemplars: that is not Keyward tracing and is left out.)
 */
const otel = () => resolved
  .filter(({ specifier, parent }) => specifier.startsWith('@opentelemetry/') && ((parent.startsWith(ROOT) && !parent.includes('/node_modules/')) || specifier !== '@opentelemetry/api'))
  .map(({ specifier }) => specifier);

test.serial('without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry module is imported, even serving proxied requests', async (t) => {
  const { proxyFixture } = await import('../support/proxy-fixture.js');
  const f = await proxyFixture(t);
  t.is(f.app.config.traces, undefined);
  const res = await fetch(f.proxyUrl('v1/chat/completions'), {
    method: 'POST',
    headers: { authorization: `Bearer ${f.tokens.openai.token}`, 'content-type': 'application/json', traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [] }),
  });
  t.is(res.status, 200);
  await res.text();
  await f.app.stop();
  t.true(resolved.some((r) => r.specifier.includes('container')), 'the hook sees the server\'s own modules');
  t.deepEqual(otel(), []);
});

test.serial('with it, the SDK is loaded at start-up', async (t) => {
  const { startOtlpReceiver } = await import('../support/otlp-receiver.js');
  const { startApp } = await import('../support/app.js');
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const app = await startApp(t, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
  await app.stop();
  t.true(otel().includes('@opentelemetry/sdk-trace'), otel().join(', '));
});
