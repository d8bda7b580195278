/**
 * `keyward keys rewrap` with the local key wrapper: rotate KEYWARD_LOCAL_KEK
 * (the old key in KEYWARD_LOCAL_KEK_PREVIOUS), rewrap, retire the old key.
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Writable } from 'node:stream';
import { DatabaseSync } from 'node:sqlite';
import { loadConfig } from '../../src/settings/config.js';
import { openVault } from '../../src/boot/vault.js';
import { localKekId } from '../../src/kms/local.js';
import { createLogger } from '../../src/log.js';
import { randomBase62 } from '../../src/ids.js';
import { tempDir } from '../support/app.js';
import { cli } from '../support/cli.js';

interface Row {
  id: string;
  org_id: string;
  provider: string;
  kek_id: string;
  wrapped_dek: Buffer;
  nonce: Buffer;
  ciphertext: Buffer;
}

function rows(dataDir: string): Map<string, Row> {
  const db = new DatabaseSync(path.join(dataDir, 'keyward.db'), { readOnly: true });
  try {
    const all = db.prepare('SELECT id, org_id, provider, kek_id, wrapped_dek, nonce, ciphertext FROM credentials ORDER BY id').all() as unknown as Row[];
    return new Map(all.map((r) => [r.id, { ...r, wrapped_dek: Buffer.from(r.wrapped_dek), nonce: Buffer.from(r.nonce), ciphertext: Buffer.from(r.ciphertext) }]));
  } finally {
    db.close();
  }
}

/** Decrypts every credential in-process with the given keys; returns id → key, or the error message. */
async function decryptAll(dataDir: string, env: Record<string, string>, ids: Map<string, Row>): Promise<Map<string, string>> {
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  const vault = await openVault(loadConfig({ KEYWARD_DATA_DIR: dataDir, ...env }), createLogger('error', sink));
  const out = new Map<string, string>();
  try {
    for (const r of ids.values()) {
      try {
        out.set(r.id, await vault.credentials.keyFor({ orgId: r.org_id, id: r.id, provider: r.provider }));
      } catch (err) {
        out.set(r.id, `error: ${(err as Error).message}`);
      }
    }
  } finally {
    await vault.close();
  }
  return out;
}

test('rotate the local KEK: old credentials still open, rewrap moves every DEK, ciphertexts untouched, the old key can go', async (t) => {
  const dataDir = tempDir(t);
  const OLD = randomBytes(32).toString('base64');
  const NEW = randomBytes(32).toString('base64');
  const oldId = localKekId(Buffer.from(OLD, 'base64'));
  const newId = localKekId(Buffer.from(NEW, 'base64'));
  const before = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: OLD };
  const during = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: NEW, KEYWARD_LOCAL_KEK_PREVIOUS: OLD };
  const after = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: NEW };

  const org = (await cli(['org', 'create', 'acme', '--json'], { env: before })).json.id as string;
  const keys = new Map<string, string>();
  for (const provider of ['openai', 'anthropic', 'gemini']) {
    const key = `sk-${provider}-${randomBase62(30)}`;
    const r = await cli(['credentials', 'create', '--org', org, '--provider', provider, '--json'], { env: before, input: key });
    t.is(r.code, 0, r.stderr);
    keys.set(r.json.id, key);
  }
  const original = rows(dataDir);
  t.true([...original.values()].every((r) => r.kek_id === oldId));

  // The new key alone cannot open the old records, and rewrap without the old key fails (exit 1), changing nothing.
  const missingPrevious = await cli(['keys', 'rewrap', '--json'], { env: after });
  t.is(missingPrevious.code, 1, missingPrevious.stderr);
  t.is(missingPrevious.json.scanned, 3);
  t.is(missingPrevious.json.rewrapped, 0);
  t.is(missingPrevious.json.failed.length, 3);
  t.deepEqual(missingPrevious.json.failed.map((f: any) => f.id).sort(), [...keys.keys()].sort());
  t.deepEqual(rows(dataDir), original);
  const blind = await decryptAll(dataDir, after, original);
  t.true([...blind.values()].every((v) => v.startsWith('error')));

  // With the old key as previous: everything still opens, and new credentials use the new key.
  const mixed = await decryptAll(dataDir, during, original);
  for (const [id, key] of keys) t.is(mixed.get(id), key);
  const lateKey = `sk-late-${randomBase62(30)}`;
  const late = await cli(['credentials', 'create', '--org', org, '--provider', 'openai', '--json'], { env: during, input: lateKey });
  t.is(late.code, 0, late.stderr);
  keys.set(late.json.id, lateKey);
  t.is(rows(dataDir).get(late.json.id)!.kek_id, newId);

  const rewrap = await cli(['keys', 'rewrap', '--json'], { env: during });
  t.is(rewrap.code, 0, rewrap.stderr);
  t.deepEqual(rewrap.json, { kek_id: newId, scanned: 4, rewrapped: 3, already_current: 1, changed: 0, failed: [] });
  const moved = rows(dataDir);
  for (const [id, r] of moved) {
    t.is(r.kek_id, newId, id);
    if (original.has(id)) {
      const o = original.get(id)!;
      t.true(r.ciphertext.equals(o.ciphertext), `${id}: ciphertext untouched`);
      t.true(r.nonce.equals(o.nonce), `${id}: nonce untouched`);
      t.false(r.wrapped_dek.equals(o.wrapped_dek), `${id}: DEK rewrapped`);
    }
  }
  for (const k of keys.values()) {
    t.false(rewrap.stdout.includes(k));
    t.false(rewrap.stderr.includes(k));
  }

  // Again: nothing left to do.
  const again = await cli(['keys', 'rewrap'], { env: during });
  t.is(again.code, 0, again.stderr);
  t.regex(again.stdout, /rewrapped:\s+0/);
  t.regex(again.stdout, /already current:\s+4/);
  t.deepEqual(rows(dataDir), moved);

  // The old key retired: every credential still opens.
  const final = await decryptAll(dataDir, after, moved);
  for (const [id, key] of keys) t.is(final.get(id), key, id);
});

test('keys rewrap on an empty store, and with the key file default', async (t) => {
  const dataDir = tempDir(t);
  const r = await cli(['keys', 'rewrap', '--json'], { env: { KEYWARD_DATA_DIR: dataDir } });
  t.is(r.code, 0, r.stderr);
  t.is(r.json.scanned, 0);
  t.is(r.json.rewrapped, 0);
  t.regex(r.json.kek_id, /^local:[0-9a-f]{16}$/);
});
