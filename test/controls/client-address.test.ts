/**
 * The client address behind KEYWARD_TRUSTED_PROXIES: which X-Forwarded-For
 * entry counts, what is never trusted, IPv6 counted by its /64, and that the
 * address is what the cool-down, the audit trail and the logs see.
 */
import test from 'ava';
import type { IncomingMessage } from 'node:http';
import { addressBucket, clientAddress } from '../../src/controls/client-address.js';
import { api, createCredential, createOrg, startApp, type TestApp } from '../support/app.js';
import { quiet } from '../support/wait.js';

function req(socket: string | undefined, ...xff: string[]): IncomingMessage {
  return { socket: { remoteAddress: socket }, headersDistinct: xff.length ? { 'x-forwarded-for': xff } : {} } as unknown as IncomingMessage;
}

test('unit: the entry N places from the right; 0 ignores the header; short lists give the leftmost; junk gives the socket', (t) => {
  t.is(clientAddress(req('10.0.0.1', '198.51.100.7'), 0), '10.0.0.1');
  t.is(clientAddress(req('10.0.0.1', '1.1.1.1, 198.51.100.7'), 1), '198.51.100.7');
  t.is(clientAddress(req('10.0.0.1', '1.1.1.1, 198.51.100.7, 35.191.0.1'), 2), '198.51.100.7');
  // Several header lines are one list, in order.
  t.is(clientAddress(req('10.0.0.1', '1.1.1.1', ' 198.51.100.7 ,35.191.0.1'), 2), '198.51.100.7');
  t.is(clientAddress(req('10.0.0.1', '198.51.100.7'), 3), '198.51.100.7', 'shorter than N: the leftmost');
  t.is(clientAddress(req('10.0.0.1'), 1), '10.0.0.1', 'no header: the socket');
  for (const junk of ['unknown', '', '1.1.1.1:80', 'evil.example', '300.1.1.1', '<script>']) {
    t.is(clientAddress(req('10.0.0.1', `1.1.1.1, ${junk}`), 1), '10.0.0.1', JSON.stringify(junk));
  }
  t.is(clientAddress(req('::ffff:10.0.0.1'), 0), '10.0.0.1', 'IPv4-mapped socket address');
  t.is(clientAddress(req('10.0.0.1', '::FFFF:198.51.100.7'), 1), '198.51.100.7', 'IPv4-mapped header entry');
  t.is(clientAddress(req('10.0.0.1', '2001:db8::1'), 1), '2001:db8::1');
  t.is(clientAddress(req(undefined), 0), '');
});

test('unit: IPv6 is bucketed by its /64, IPv4 by itself', (t) => {
  t.is(addressBucket('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  t.is(addressBucket('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
  t.is(addressBucket('2001:0db8:0001:0002:0:0:0:9'), '2001:db8:1:2::/64');
  t.not(addressBucket('2001:db8:1:3::1'), addressBucket('2001:db8:1:2::1'));
  t.is(addressBucket('::1'), '0:0:0:0::/64');
  t.is(addressBucket('fe80::1%eth0'), 'fe80:0:0:0::/64');
  t.is(addressBucket('64:ff9b::198.51.100.7'), '64:ff9b:0:0::/64');
  t.is(addressBucket('198.51.100.7'), '198.51.100.7');
  t.is(addressBucket(''), '');
});

const COOL = { KEYWARD_AUTH_FAILURES: '3', KEYWARD_AUTH_COOLDOWN_S: '60' };

/** One admin call with a bad org token, from `xff`. */
async function badAuth(app: TestApp, xff: string): Promise<number> {
  return (await api(app, 'GET', '/v1/credentials', { token: 'otok_wrong', headers: { 'x-forwarded-for': xff } })).status;
}

test('KEYWARD_TRUSTED_PROXIES=1: failures count per client address, spoofed left entries are ignored, one /64 shares a count', async (t) => {
  const app = await startApp(t, { env: { ...COOL, KEYWARD_TRUSTED_PROXIES: '1' } });
  // The attacker varies what it controls (the left entries); the proxy's entry names it every time.
  for (let i = 0; i < 3; i++) t.is(await badAuth(app, `10.9.9.${i}, 203.0.113.66`), 401);
  t.is(await badAuth(app, '203.0.113.66'), 429, 'the attacker cools down');
  t.is(await badAuth(app, '198.51.100.1, 203.0.113.66'), 429, 'a spoofed left entry does not escape it');
  // Another client behind the same proxy (the same socket) is not cooled down by the attacker's failures.
  t.is(await badAuth(app, '203.0.113.66, 198.51.100.7'), 401, 'a spoofed left entry is not counted either');
  const proxied = await fetch(`${app.url}/v1/proxy/v1/models`, { headers: { 'x-proxy-token': 'ptok_wrong', 'x-forwarded-for': '198.51.100.8' } });
  t.is(proxied.status, 401);

  // IPv6: one subscriber's /64 is one count; the next /64 is another.
  for (const host of ['1', '2', 'abcd:1:2']) t.is(await badAuth(app, `2001:db8:1:2::${host}`), 401);
  t.is(await badAuth(app, '2001:db8:1:2:ffff::9'), 429);
  t.is(await badAuth(app, '2001:db8:1:3::1'), 401);
});

test('KEYWARD_TRUSTED_PROXIES=1: audit `ip` and log lines show the client address', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_TRUSTED_PROXIES: '1' } });
  const org = await createOrg(app);
  const created = await api(app, 'POST', '/v1/credentials', {
    token: org.token, body: { provider: 'openai', api_key: 'sk-client-address-0123456789' }, headers: { 'x-forwarded-for': '1.2.3.4, 203.0.113.9' },
  });
  t.is(created.status, 201);
  const audit = await api(app, 'GET', '/v1/audit', { token: org.token });
  const record = audit.body.data.find((e: any) => e.action === 'credential.create');
  t.is(record.ip, '203.0.113.9');
  const line = app.logs.find((l) => l.message === 'admin request' && (l.httpRequest as any)?.requestMethod === 'POST' && (l.httpRequest as any)?.status === 201
    && (l.keyward as any)?.org === org.id);
  t.is((line?.httpRequest as any)?.remoteIp, '203.0.113.9');
  await (await fetch(`${app.url}/v1/proxy/v1/models`, { headers: { 'x-proxy-token': 'ptok_wrong', 'x-forwarded-for': '2001:db8::5' } })).text();
  await quiet(app);
  const proxyLine = app.logs.find((l) => l.message === 'proxy request');
  t.is((proxyLine?.httpRequest as any)?.remoteIp, '2001:db8::5');
});

test('KEYWARD_TRUSTED_PROXIES=0 (the default): X-Forwarded-For is ignored', async (t) => {
  const app = await startApp(t, { env: COOL });
  // Three different claimed addresses are one socket address: the fourth is refused whatever it claims.
  for (let i = 0; i < 3; i++) t.is(await badAuth(app, `198.51.100.${i}`), 401);
  t.is(await badAuth(app, '198.51.100.200'), 429);
  const org = await createOrg(app);
  await createCredential(app, org, 'openai', 'sk-client-address-0123456789');
  const audit = await api(app, 'GET', '/v1/audit', { token: org.token, headers: { 'x-forwarded-for': '203.0.113.9' } });
  t.is(audit.body.data.find((e: any) => e.action === 'credential.create').ip, '127.0.0.1');
});
