import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { LocalKeyWrapper } from '../../src/kms/local.js';
import type { CredentialRecord, CredentialStore } from '../../src/store/ports.js';
import { Envelope } from '../../src/vault/envelope.js';
import { RewrapService } from '../../src/vault/rewrap-service.js';

/** Just enough of a CredentialStore for rewrap, with a hook to lose the compare-and-set race. */
function memoryStore(records: CredentialRecord[], loseRaceFor = new Set<string>()) {
  const writes: string[] = [];
  const store = {
    async *allCredentials() {
      for (const r of records) yield { ...r };
    },
    async rewrapCredential(id: string, expected: Buffer, wrappedDek: Buffer, kekId: string) {
      const r = records.find((x) => x.id === id);
      if (!r || loseRaceFor.has(id) || !r.wrappedDek.equals(expected)) return false;
      r.wrappedDek = wrappedDek;
      r.kekId = kekId;
      writes.push(id);
      return true;
    },
  } as unknown as CredentialStore;
  return { store, writes };
}

async function seal(envelope: Envelope, id: string, key: string): Promise<CredentialRecord> {
  const ref = { orgId: 'org_A', id, provider: 'openai' };
  return { ...ref, ...(await envelope.seal(ref, key)), keyHint: key.slice(-4), createdAt: 0, updatedAt: 0 };
}

test('rewraps what is under another KEK, skips the current, reports lost races and failures; ciphertext untouched', async (t) => {
  const oldKek = randomBytes(32);
  const newKek = randomBytes(32);
  const oldEnvelope = new Envelope(new LocalKeyWrapper(oldKek));
  const wrapper = new LocalKeyWrapper(newKek, oldKek);
  const envelope = new Envelope(wrapper);
  const stranger = new Envelope(new LocalKeyWrapper(randomBytes(32)));
  const records = [
    await seal(oldEnvelope, 'cred_1', 'sk-one-00000000'),
    await seal(oldEnvelope, 'cred_2', 'sk-two-00000000'),
    await seal(envelope, 'cred_3', 'sk-three-000000'),
    await seal(oldEnvelope, 'cred_4', 'sk-four-0000000'),
    await seal(stranger, 'cred_5', 'sk-five-0000000'),
  ];
  const ciphertexts = records.map((r) => Buffer.from(r.ciphertext));
  const { store, writes } = memoryStore(records, new Set(['cred_4']));
  const seen: string[] = [];
  const report = await new RewrapService(store, envelope, wrapper).run((id, outcome) => seen.push(`${id}:${outcome}`));
  t.is(report.kekId, await wrapper.currentKekId());
  t.is(report.scanned, 5);
  t.is(report.rewrapped, 2);
  t.is(report.alreadyCurrent, 1);
  t.is(report.changed, 1);
  t.deepEqual(report.failed.map((f) => f.id), ['cred_5']);
  t.regex(report.failed[0]!.reason, /not configured/);
  t.deepEqual(writes, ['cred_1', 'cred_2']);
  t.deepEqual(seen, ['cred_1:rewrapped', 'cred_2:rewrapped', 'cred_3:current', 'cred_4:changed', 'cred_5:failed']);
  records.forEach((r, i) => t.true(r.ciphertext.equals(ciphertexts[i]!)));
  // What was rewrapped opens under the new key alone.
  const newOnly = new Envelope(new LocalKeyWrapper(newKek));
  t.is(await newOnly.open(records[0]!, records[0]!), 'sk-one-00000000');
  t.is(await newOnly.open(records[1]!, records[1]!), 'sk-two-00000000');
  await t.throwsAsync(newOnly.open(records[3]!, records[3]!));
});

test('a wrapped DEK that fails its integrity check is reported, not rewrapped', async (t) => {
  const oldKek = randomBytes(32);
  const wrapper = new LocalKeyWrapper(randomBytes(32), oldKek);
  const record = await seal(new Envelope(new LocalKeyWrapper(oldKek)), 'cred_x', 'sk-tampered-000');
  record.wrappedDek[20] = record.wrappedDek[20]! ^ 0xff;
  const { store, writes } = memoryStore([record]);
  const report = await new RewrapService(store, new Envelope(wrapper), wrapper).run();
  t.is(report.failed.length, 1);
  t.regex(report.failed[0]!.reason, /integrity/);
  t.deepEqual(writes, []);
});
