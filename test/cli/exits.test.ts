/**
 * The `keyward` CLI exits when its work is done, on both stores: each command below answers and its
 * process ends on its own (the Firestore client used to keep the process alive after printing the answer).
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { cli } from '../support/cli.js';
import { tempDir } from '../support/app.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { newId } from '../../src/ids.js';

for (const name of ['sqlite', 'firestore'] as const) {
  test(`${name}: every command exits by itself once it has answered`, async (t) => {
    const env: Record<string, string> = name === 'sqlite'
      ? { KEYWARD_DATA_DIR: tempDir(t) }
      : { KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: (await startEmulator(t)).host, GOOGLE_CLOUD_PROJECT: 'keyward-cli-exits', KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64') };
    // A command that does not exit within 20 s makes cli() reject: the test fails naming it.
    const made = await cli(['org', 'create', 'acme', '--json'], { env, timeoutMs: 20_000 });
    t.is(made.code, 0, made.stderr);
    const org = made.json.id as string;
    for (const args of [['usage', '--org', org], ['credentials', 'list', '--org', org], ['tokens', 'list', '--org', org, '--json']]) {
      const r = await cli(args, { env, timeoutMs: 20_000 });
      t.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    const missing = await cli(['tokens', 'get', newId('tok'), '--org', org], { env, timeoutMs: 20_000 });
    t.is(missing.code, 3, 'a failing command exits too, with its code');
  });
}
