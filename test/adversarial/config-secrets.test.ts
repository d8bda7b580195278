/**
 * A configuration error never echoes a secret (contract, Hardening): URL
 * userinfo and query strings in KEYWARD_UPSTREAM_*, and the secret-valued
 * variables, are redacted from the ConfigError, parsed or not.
 */
import test from 'ava';
import { ConfigError, loadConfig } from '../../src/settings/config.js';

function errorOf(env: Record<string, string>): ConfigError {
  try {
    loadConfig({ KEYWARD_DATA_DIR: '/nonexistent', ...env });
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`);
}

test('KEYWARD_UPSTREAM_*: a URL with a user and password, or a key in its query, is refused without echoing them', (t) => {
  const cases: Array<[string, string[]]> = [
    ['https://user:hunter2-secret@host.example', ['hunter2-secret', 'user:']],
    ['https://admin:p%40ss-secret@api.example:8443/v1', ['p%40ss-secret', 'admin']],
    ['https://only-a-user-secret@host.example', ['only-a-user-secret']],
    ['https://user:pa ss-secret@host.example', ['pa ss-secret']], // does not parse: still redacted
    ['user:bare-secret@host.example', ['bare-secret']],
    ['https://host.example/?key=query-secret', ['query-secret']],
    ['https://host.example/#frag-secret', ['frag-secret']],
    ['ftp://ftp-user:ftp-secret@host.example', ['ftp-secret']],
  ];
  for (const [value, secrets] of cases) {
    const err = errorOf({ KEYWARD_UPSTREAM_OPENAI: value });
    t.is(err.variable, 'KEYWARD_UPSTREAM_OPENAI');
    t.true(err.message.includes('KEYWARD_UPSTREAM_OPENAI'), err.message);
    for (const s of secrets) t.false(err.message.includes(s), `${value} → ${err.message}`);
  }
  // Not a secret: the host part still helps the operator find the line.
  t.true(errorOf({ KEYWARD_UPSTREAM_OPENAI: 'https://u:p-secret@host.example' }).message.includes('host.example'));
});

test('secret-valued variables are never echoed', (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ KEYWARD_ADMIN_TOKEN: 'short-admin' }, 'short-admin'],
    [{ KEYWARD_METRICS_TOKEN: 'short-metric' }, 'short-metric'],
    [{ KEYWARD_METRICS_TOKEN: 'a long metrics token with spaces' }, 'a long metrics token'],
    [{ KEYWARD_LOCAL_KEK: 'not-a-kek-secret' }, 'not-a-kek-secret'],
    [{ KEYWARD_LOCAL_KEK_PREVIOUS: Buffer.alloc(32, 7).toString('base64') }, Buffer.alloc(32, 7).toString('base64')],
  ];
  for (const [env, secret] of cases) {
    const err = errorOf(env);
    t.true(Object.keys(env).includes(err.variable), err.message);
    t.false(err.message.includes(secret), err.message);
  }
});

test('KEYWARD_TRUSTED_PROXIES and KEYWARD_METRICS_TOKEN: defaults, good and bad values', (t) => {
  const base = loadConfig({ KEYWARD_DATA_DIR: '/nonexistent' });
  t.is(base.trustedProxies, 0);
  t.is(base.metricsToken, undefined);
  const set = loadConfig({ KEYWARD_DATA_DIR: '/nonexistent', KEYWARD_TRUSTED_PROXIES: '2', KEYWARD_METRICS_TOKEN: 'metrics-token-0123456789' });
  t.is(set.trustedProxies, 2);
  t.is(set.metricsToken, 'metrics-token-0123456789');
  for (const bad of ['-1', 'one', '1.5', '33']) t.is(errorOf({ KEYWARD_TRUSTED_PROXIES: bad }).variable, 'KEYWARD_TRUSTED_PROXIES');
});
