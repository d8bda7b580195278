/**
 * KEYWARD_TLS_CERT / KEYWARD_TLS_KEY: the gateway serves TLS itself on its one port, HTTP/2 or HTTP/1.1 by ALPN
 * (a proxied request over each), with a certificate clients verify against the test CA; both files or neither,
 * each readable PEM, else start-up stops naming the variable (and never printing the key).
 */
import test from 'ava';
import { writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/settings/config.js';
import { tempDir } from '../support/app.js';
import { httpsJson, realtimeFixture } from '../support/realtime-fixture.js';
import { testPki } from '../support/tls.js';

test('one TLS port: HTTP/1.1 and HTTP/2 by ALPN, the certificate verified against the test CA', async (t) => {
  const f = await realtimeFixture(t, { tls: true });
  t.is((await httpsJson(`${f.origin}/healthz`, f.pki.ca, 'GET', undefined)).status, 200);
  const session = http2.connect(f.origin, { ca: f.pki.ca });
  t.teardown(() => session.close());
  const get = (headers: http2.OutgoingHttpHeaders) => new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
    const req = session.request(headers);
    req.on('response', resolve);
    req.on('error', reject);
    req.resume();
    req.end();
  });
  t.is(Number((await get({ ':path': '/healthz' }))[':status']), 200);
  t.is(session.alpnProtocol, 'h2');
  // A proxied request over HTTP/2 reaches the provider (the fake answers plain requests 404) and comes back.
  const tok = await f.mint('openai');
  const proxied = await get({ ':path': '/v1/proxy/v1/models', 'x-proxy-token': tok.token });
  t.is(Number(proxied[':status']), 404);
  t.truthy(proxied['x-keyward-request-id']);
  // A client that does not trust the CA is refused by TLS itself.
  await t.throwsAsync(httpsJson(`${f.origin}/healthz`, Buffer.from(''), 'GET', undefined));
});

test('KEYWARD_TLS_CERT and KEYWARD_TLS_KEY: both or neither, each readable PEM, named when wrong', (t) => {
  const pki = testPki(t);
  const dir = tempDir(t);
  const notPem = path.join(dir, 'x.pem');
  writeFileSync(notPem, 'not a certificate');
  const base = { KEYWARD_DATA_DIR: dir };
  t.truthy(loadConfig({ ...base, KEYWARD_TLS_CERT: pki.certFile, KEYWARD_TLS_KEY: pki.keyFile }).tls);
  t.is(loadConfig(base).tls, undefined);
  t.throws(() => loadConfig({ ...base, KEYWARD_TLS_CERT: pki.certFile }), { instanceOf: ConfigError, message: /^KEYWARD_TLS_KEY/ });
  t.throws(() => loadConfig({ ...base, KEYWARD_TLS_KEY: pki.keyFile }), { instanceOf: ConfigError, message: /^KEYWARD_TLS_CERT/ });
  t.throws(() => loadConfig({ ...base, KEYWARD_TLS_CERT: notPem, KEYWARD_TLS_KEY: pki.keyFile }), { message: /^KEYWARD_TLS_CERT: expected a PEM file/ });
  t.throws(() => loadConfig({ ...base, KEYWARD_TLS_CERT: pki.certFile, KEYWARD_TLS_KEY: path.join(dir, 'missing.pem') }), { message: /^KEYWARD_TLS_KEY: expected a readable PEM file \(ENOENT\)/ });
  const swapped = (() => {
    try {
      loadConfig({ ...base, KEYWARD_TLS_CERT: pki.keyFile, KEYWARD_TLS_KEY: pki.keyFile });
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  })();
  t.false(swapped.includes('PRIVATE KEY'), 'the key file\'s contents are never in the message');
  t.regex(swapped, /^KEYWARD_TLS_CERT/);
});
