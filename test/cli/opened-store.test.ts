/**
 * The CLI says which store and key it opens (one stderr line, never a secret; stdout stays the result alone), and
 * refuses, with exit 2 naming KEYWARD_STORE, a shell that holds any of a deployment's cloud settings but no
 * KEYWARD_STORE: before anything is opened or created, so no fresh local store or signing key appears.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/app.js';
import { cli, cliInProcess } from '../support/cli.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { startKmsServer } from '../support/kms-server.js';
import { unnamedStore } from '../../src/cli/opened-store.js';

const KEK = randomBytes(32).toString('base64');

/** One of each kind the rule names, with a value of the shape a deployment's settings hold. */
const CLOUD: Record<string, string> = {
  KEYWARD_ISSUER_URL: 'https://keyward.example.com',
  KEYWARD_KMS_KEY: 'projects/my-project/locations/europe-west1/keyRings/keyward/cryptoKeys/kek',
  KEYWARD_KMS_SIGNING_KEY: 'projects/my-project/locations/europe-west1/keyRings/keyward/cryptoKeys/oidc-signer/cryptoKeyVersions/1',
  KEYWARD_KMS_ENDPOINT: '127.0.0.1:9',
  FIRESTORE_EMULATOR_HOST: '127.0.0.1:8081',
  FIRESTORE_DATABASE: '(default)',
  GOOGLE_CLOUD_PROJECT: 'my-project',
};

test('a local store: one stderr line names the SQLite file and the key (the KEK by its variable, never its value); --json stdout is the JSON alone', async (t) => {
  const dataDir = tempDir(t);
  const r = await cli(['org', 'create', 'acme', '--json'], { env: { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK } });
  t.is(r.code, 0, r.stderr);
  t.is(r.stdout.trim(), JSON.stringify(r.json, null, 2), 'stdout is exactly the JSON');
  t.deepEqual(r.stderr.trim().split('\n'), [`keyward: store sqlite ${path.join(dataDir, 'keyward.db')}, key local KEYWARD_LOCAL_KEK`]);
  t.false(r.stderr.includes(KEK));
  t.false(r.stderr.includes(r.json.token), 'the org token stays on stdout');

  const keyFile = tempDir(t);
  const made = await cli(['org', 'create', 'acme'], { env: { KEYWARD_DATA_DIR: keyFile } });
  t.is(made.code, 0, made.stderr);
  t.is(made.stderr.split('\n').filter((l) => l.startsWith('keyward: store ')).join('\n'), `keyward: store sqlite ${path.join(keyFile, 'keyward.db')}, key local ${path.join(keyFile, 'kek')}`);
});

test('each cloud setting without KEYWARD_STORE: exit 2 naming KEYWARD_STORE and the setting, nothing on stdout, nothing opened or created', async (t) => {
  for (const [name, value] of Object.entries(CLOUD)) {
    const dataDir = path.join(tempDir(t), 'never-created');
    for (const store of [undefined, '']) {
      const env: Record<string, string> = { KEYWARD_DATA_DIR: dataDir, [name]: value, ...(store === undefined ? {} : { KEYWARD_STORE: store }) };
      const r = await cliInProcess(['keys', 'rotate-signing'], env);
      t.is(r.code, 2, `${name}: ${r.stderr}`);
      t.is(r.stdout, '');
      t.regex(r.stderr, new RegExp(`^keyward: KEYWARD_STORE is not set, but ${name} is: `), name);
      t.false(r.stderr.includes('keyward: store '), 'no store line: nothing was opened');
      t.false(existsSync(dataDir), `${name}: no local store or key was created`);
    }
  }
  // With --json the refusal is JSON on stderr, like every usage error.
  const j = await cliInProcess(['keys', 'export-discovery', tempDir(t), '--json'], { KEYWARD_DATA_DIR: tempDir(t), ...CLOUD });
  t.is(j.code, 2);
  const error = JSON.parse(j.stderr).error as { code: string; message: string };
  t.is(error.code, 'usage');
  t.regex(error.message, /^KEYWARD_STORE is not set, but FIRESTORE_DATABASE, FIRESTORE_EMULATOR_HOST, GOOGLE_CLOUD_PROJECT, KEYWARD_ISSUER_URL, KEYWARD_KMS_ENDPOINT, KEYWARD_KMS_KEY, KEYWARD_KMS_SIGNING_KEY are: /);
});

test('the rule names exactly the cloud settings: KEYWARD_KMS itself, KEYWARD_LOCAL_KEK and other variables are not one; --help opens nothing and is never refused', async (t) => {
  t.is(unnamedStore({ KEYWARD_KMS: 'local', KEYWARD_LOCAL_KEK: KEK, KEYWARD_DATA_DIR: '/x', KEYWARD_ADMIN_TOKEN: 'x'.repeat(20), GOOGLE_CLOUD_REGION: 'r' }), undefined);
  t.is(unnamedStore({ ...CLOUD, KEYWARD_STORE: 'sqlite' }), undefined);
  t.is(unnamedStore({ ...CLOUD, KEYWARD_STORE: 'firestore' }), undefined);
  t.regex(unnamedStore({ KEYWARD_KMS_ANYTHING: 'x' }) ?? '', /but KEYWARD_KMS_ANYTHING is/);
  t.regex(unnamedStore({ FIRESTORE_ANYTHING: 'x' }) ?? '', /but FIRESTORE_ANYTHING is/);
  t.is(unnamedStore({ GOOGLE_CLOUD_PROJECT: '' }), undefined, 'an empty variable is unset, as config.ts reads it');
  const help = await cliInProcess(['keys', 'rotate-signing', '--help'], CLOUD);
  t.is(help.code, 0);
  t.is(help.stderr, '');
  t.regex(help.stdout, /default 1h/);
});

test('a named store with cloud settings: the line names the Firestore project and emulator, the Cloud KMS key and endpoint, the issuer', async (t) => {
  const [emulator, kms] = await Promise.all([startEmulator(t), startKmsServer(t)]);
  const env = {
    KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: 'keyward-cli-opened',
    KEYWARD_KMS: 'gcp', KEYWARD_KMS_KEY: kms.keyName, KEYWARD_KMS_ENDPOINT: kms.endpoint, KEYWARD_ISSUER_URL: 'https://keyward.example.com',
  };
  const r = await cli(['org', 'create', 'acme', '--json'], { env, timeoutMs: 30_000 });
  t.is(r.code, 0, r.stderr);
  t.is(r.json.name, 'acme');
  t.deepEqual(r.stderr.trim().split('\n'), [
    `keyward: store firestore project keyward-cli-opened emulator ${emulator.host}, key gcp ${kms.keyName} endpoint ${kms.endpoint}, issuer https://keyward.example.com`,
  ]);
});

test('in a Cloud Run job (CLOUD_RUN_JOB set), a command that prints a new secret or reads one from stdin is refused before anything is opened; others run', async (t) => {
  const dataDir = tempDir(t);
  const env = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK };
  const org = await cliInProcess(['org', 'create', 'acme', '--json'], env);
  t.is(org.code, 0, org.stderr);
  const orgId = JSON.parse(org.stdout).id as string;
  const job = { ...env, CLOUD_RUN_JOB: 'keyward-admin' };
  for (const args of [['org', 'create', 'beta'], ['tokens', 'create', '--org', orgId, '--credential', 'cred_x'], ['admin-keys', 'create', '--org', orgId, '--role', 'viewer'], ['credentials', 'create', '--org', orgId, '--provider', 'openai'], ['credentials', 'rotate', 'cred_x', '--org', orgId]]) {
    const r = await cliInProcess(args, job);
    t.is(r.code, 2, args.join(' '));
    t.is(r.stdout, '');
    t.regex(r.stderr, /is not run in a Cloud Run job \(keyward-admin\): its output goes to Cloud Logging/, args.join(' '));
    t.false(r.stderr.includes('keyward: store '), 'refused before the store is opened');
  }
  const listed = await cliInProcess(['credentials', 'list', '--org', orgId, '--json'], job);
  t.is(listed.code, 0, listed.stderr);
  t.deepEqual(JSON.parse(listed.stdout).data, []);
});
