/**
 * The embedded store's files: the data dir Keyward creates is 0700; the
 * database, its -wal and -shm, and the local `kek` are 0600 after writes,
 * whatever the umask, and files an earlier version left 0644 are narrowed.
 */
import test from 'ava';
import { chmodSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { api, createOrg, startApp, tempDir } from '../support/app.js';

const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);

test('a data dir Keyward creates is 0700; keyward.db, -wal, -shm and kek are 0600 after writes', async (t) => {
  const dataDir = path.join(tempDir(t), 'new', 'data');
  const app = await startApp(t, { dataDir });
  const org = await createOrg(app);
  t.is((await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-modes-0123456789' }, headers: { 'idempotency-key': 'm' } })).status, 201);
  const db = path.join(dataDir, 'keyward.db');
  t.true(existsSync(`${db}-wal`) && existsSync(`${db}-shm`), 'WAL files exist while the server runs');
  t.is(mode(dataDir), '700');
  t.is(mode(path.dirname(dataDir)), '700', 'a parent it had to create too');
  for (const f of [db, `${db}-wal`, `${db}-shm`, path.join(dataDir, 'kek')]) t.is(mode(f), '600', f);
});

test('files an earlier version left readable by others are narrowed to 0600 on start; an existing data dir is left as it is', async (t) => {
  const dataDir = tempDir(t);
  chmodSync(dataDir, 0o755);
  const first = await startApp(t, { dataDir });
  await createOrg(first);
  await first.stop();
  const db = path.join(dataDir, 'keyward.db');
  const files = [db, `${db}-wal`, `${db}-shm`, path.join(dataDir, 'kek')].filter((f) => existsSync(f));
  for (const f of files) chmodSync(f, 0o644);
  const second = await startApp(t, { dataDir });
  await createOrg(second, 'again');
  for (const f of [db, `${db}-wal`, `${db}-shm`, path.join(dataDir, 'kek')]) t.is(mode(f), '600', f);
  t.is(mode(dataDir), '755', 'the operator\'s folder, not ours to change');
});
