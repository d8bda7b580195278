import 'reflect-metadata';
import test from 'ava';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ApiError, toApiError } from '../../src/errors.js';
import { CredentialService } from '../../src/vault/credential-service.js';
import { randomBase62, sha256Hex } from '../../src/ids.js';
import { TokenService } from '../../src/vault/token-service.js';
import { api, createCredential, createOrg, mintToken, startApp, tempDir, type TestApp } from '../support/app.js';

const STORE_FILES = ['keyward.db', 'keyward.db-wal', 'keyward.db-shm'];

/** Every byte of the store's files that exist right now. */
function storeBytes(dataDir: string): { bytes: Buffer; files: string[] } {
  const files = STORE_FILES.filter((f) => existsSync(path.join(dataDir, f)));
  return { bytes: Buffer.concat(files.map((f) => readFileSync(path.join(dataDir, f)))), files };
}

/** The forms a secret could be written in: as is, base64, base64url, hex, UTF-16. */
function forms(secret: string): Buffer[] {
  const raw = Buffer.from(secret, 'utf8');
  return [
    raw,
    Buffer.from(raw.toString('base64')),
    Buffer.from(raw.toString('base64url')),
    Buffer.from(raw.toString('hex')),
    Buffer.from(raw.toString('hex').toUpperCase()),
    Buffer.from(secret, 'utf16le'),
  ];
}

const uniqueKey = (label: string) => `sk-${label}-${randomBase62(40)}`;

async function keyFor(app: TestApp, orgId: string, id: string, provider: string): Promise<string> {
  return app.server.container.resolve(CredentialService).keyFor({ orgId, id, provider });
}

test('no API key, proxy token or org token is anywhere in the store files, running or stopped; token hashes are', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const keys = [uniqueKey('openai'), uniqueKey('anthropic')];
  const c1 = await createCredential(app, org, 'openai', keys[0]!);
  const c2 = await createCredential(app, org, 'anthropic', keys[1]!);
  const tok1 = await mintToken(app, org, c1);
  const tok2 = await mintToken(app, org, c2, '1h');
  const rotatedKey = uniqueKey('rotated');
  t.is((await api(app, 'POST', `/v1/credentials/${c2}/rotate`, { token: org.token, body: { api_key: rotatedKey } })).status, 200);
  const rot = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 60 } });
  t.is(rot.status, 200);
  // The store holds what it needs to serve them: prove the keys still decrypt.
  t.is(await keyFor(app, org.id, c1, 'openai'), keys[0]);
  t.is(await keyFor(app, org.id, c2, 'anthropic'), rotatedKey);

  const secrets = [...keys, rotatedKey, tok1.token, tok2.token, org.token, rot.body.token];
  const check = (when: string) => {
    const { bytes, files } = storeBytes(app.dataDir);
    t.true(files.includes('keyward.db'), when);
    // We are reading the right files: each token's SHA-256 is stored.
    for (const token of [tok1.token, tok2.token, org.token, rot.body.token]) {
      t.true(bytes.includes(Buffer.from(sha256Hex(token))), `${when}: the hash of ${token.slice(0, 5)}… is in ${files.join(', ')}`);
    }
    for (const secret of secrets) {
      for (const form of forms(secret)) t.false(bytes.includes(form), `${when}: a form of ${secret.slice(0, 5)}… is in the store`);
      // Not even the token body without its prefix.
      t.false(bytes.includes(Buffer.from(secret.slice(5))), when);
    }
    return files;
  };
  const running = check('while running');
  t.true(running.includes('keyward.db-wal'), 'WAL mode: the write-ahead log was checked too');
  await app.stop();
  check('after stop');
  // Nor in any log line.
  for (const secret of secrets) t.false(app.logText().includes(secret));
});

test('the local key file is made once with mode 0600 and a restart keeps every credential usable', async (t) => {
  const dataDir = tempDir(t);
  const first = await startApp(t, { dataDir });
  const org = await createOrg(first);
  const providers = ['openai', 'anthropic', 'gemini', 'groq', 'mistral'];
  const creds: Array<{ id: string; provider: string; key: string }> = [];
  for (const provider of providers) {
    const key = uniqueKey(provider);
    creds.push({ id: await createCredential(first, org, provider, key), provider, key });
  }
  const tok = await mintToken(first, org, creds[0]!.id, '1h');
  const kekFile = path.join(dataDir, 'kek');
  t.is(statSync(kekFile).mode & 0o777, 0o600);
  const kek = readFileSync(kekFile);
  await first.stop();

  const second = await startApp(t, { dataDir });
  t.deepEqual(readFileSync(kekFile), kek, 'the key file is reused, not replaced');
  for (const c of creds) t.is(await keyFor(second, org.id, c.id, c.provider), c.key);
  const list = await api(second, 'GET', '/v1/credentials', { token: org.token });
  t.is(list.status, 200);
  t.deepEqual(list.body.data.map((c: any) => c.id).sort(), creds.map((c) => c.id).sort());
  const resolved = await second.server.container.resolve(TokenService).resolve(tok.token);
  t.is(resolved?.credential.id, creds[0]!.id);
  // Created after the restart, too.
  const late = uniqueKey('late');
  const lateId = await createCredential(second, org, 'openai', late);
  t.is(await keyFor(second, org.id, lateId, 'openai'), late);
});

/** Stops `app`, changes its SQLite file directly, and starts a fresh app (empty caches) on the same data dir. */
async function tamper(t: Parameters<typeof startApp>[0], app: TestApp, change: (db: DatabaseSync) => void): Promise<TestApp> {
  await app.stop();
  const db = new DatabaseSync(path.join(app.dataDir, 'keyward.db'));
  try {
    change(db);
  } finally {
    db.close();
  }
  return startApp(t, { dataDir: app.dataDir });
}

function column(db: DatabaseSync, id: string, col: string): Uint8Array {
  return (db.prepare(`SELECT ${col} AS v FROM credentials WHERE id = ?`).get(id) as { v: Uint8Array }).v;
}

function setColumn(db: DatabaseSync, id: string, col: string, value: Uint8Array): void {
  const n = db.prepare(`UPDATE credentials SET ${col} = ? WHERE id = ?`).run(value, id).changes;
  if (Number(n) !== 1) throw new Error(`no row ${id}`);
}

function swap(db: DatabaseSync, a: string, b: string, cols: string[]): void {
  for (const col of cols) {
    const va = column(db, a, col);
    const vb = column(db, b, col);
    setColumn(db, a, col, vb);
    setColumn(db, b, col, va);
  }
}

async function failsClosed(t: Parameters<typeof startApp>[0], app: TestApp, orgId: string, id: string, provider: string, label: string): Promise<void> {
  const err = await t.throwsAsync(keyFor(app, orgId, id, provider), undefined, label);
  t.true(err instanceof ApiError, label);
  t.is((err as ApiError).code, 'unavailable', label);
  // Asking again fails again: a failure is never cached as a key.
  await t.throwsAsync(keyFor(app, orgId, id, provider), undefined, label);
}

test('swapping two credentials\' ciphertexts, or their wrapped DEKs, makes both fail to decrypt', async (t) => {
  let app = await startApp(t);
  const org = await createOrg(app);
  const other = await createOrg(app, 'other');
  const make = async (o = org, provider = 'openai') => {
    const key = uniqueKey(provider);
    return { id: await createCredential(app, o, provider, key), key, provider, org: o };
  };
  const [a, b, c, d, e, f, control] = [await make(), await make(), await make(), await make(), await make(), await make(other), await make()];
  app = await tamper(t, app, (db) => {
    swap(db, a.id, b.id, ['ciphertext', 'nonce']); // same org, same provider: only the AAD tells them apart
    swap(db, c.id, d.id, ['wrapped_dek', 'kek_id']);
    swap(db, e.id, f.id, ['wrapped_dek', 'kek_id', 'ciphertext', 'nonce']); // the whole sealed key, across organisations
  });
  for (const x of [a, b, c, d, e, f]) await failsClosed(t, app, x.org.id, x.id, x.provider, x.id);
  t.is(await keyFor(app, org.id, control.id, 'openai'), control.key, 'an untouched record still opens');
  const logs = app.logText();
  t.regex(logs, /integrity/);
  for (const x of [a, b, c, d, e, f, control]) t.false(logs.includes(x.key));
});

test('one flipped byte anywhere in the sealed key fails closed', async (t) => {
  let app = await startApp(t);
  const org = await createOrg(app);
  const made: Array<{ id: string; key: string }> = [];
  for (let i = 0; i < 6; i++) {
    const key = uniqueKey('flip');
    made.push({ id: await createCredential(app, org, 'openai', key), key });
  }
  const flip = (db: DatabaseSync, id: string, col: string, at: (len: number) => number) => {
    const v = Buffer.from(column(db, id, col));
    const i = at(v.length);
    v[i] = v[i]! ^ 0x01;
    setColumn(db, id, col, v);
  };
  app = await tamper(t, app, (db) => {
    flip(db, made[0]!.id, 'ciphertext', () => 0); // first ciphertext byte
    flip(db, made[1]!.id, 'ciphertext', (n) => n - 1); // last byte of the GCM tag
    flip(db, made[2]!.id, 'nonce', () => 5);
    flip(db, made[3]!.id, 'wrapped_dek', (n) => Math.floor(n / 2));
    // Moving a record to another provider changes its AAD.
    db.prepare("UPDATE credentials SET provider = 'anthropic' WHERE id = ?").run(made[4]!.id);
  });
  for (const m of made.slice(0, 4)) await failsClosed(t, app, org.id, m.id, 'openai', m.id);
  await failsClosed(t, app, org.id, made[4]!.id, 'anthropic', 'provider changed');
  t.is(await keyFor(app, org.id, made[5]!.id, 'openai'), made[5]!.key);
});

test('a wrapped DEK under an unknown key-encryption key is refused with 503 unavailable, never served', async (t) => {
  let app = await startApp(t);
  const org = await createOrg(app);
  const id = await createCredential(app, org, 'openai', uniqueKey('kek'));
  app = await tamper(t, app, (db) => {
    db.prepare("UPDATE credentials SET kek_id = 'local:0000000000000000' WHERE id = ?").run(id);
  });
  const err = await t.throwsAsync(keyFor(app, org.id, id, 'openai'));
  // A configuration problem, answered 503 unavailable (not a 500, not an integrity alarm).
  t.is(toApiError(err).status, 503);
  t.is(toApiError(err).code, 'unavailable');
  t.regex(err!.message, /local:0000000000000000 is not configured/);
});
