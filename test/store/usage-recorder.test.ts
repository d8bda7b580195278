/**
 * UsageRecorder's own promises, on the injected clock with a store that keeps what it is given: each request
 * lands in all seven of its counters (month: org, credential, token; day: org, and the breakdown's token,
 * credential and model); a counter let go of (untouched for ten minutes) and counted again has its stored totals
 * read back first, so nothing is lost or counted twice; a new day starts new day counters and keeps the month's.
 * The recorder finds a request's counters once per token, credential and model, so these are the cases where a
 * set it found earlier must not be reused.
 */
import 'reflect-metadata';
import test from 'ava';
import { UsageRecorder, type UsageEvent } from '../../src/accounting/usage-recorder.js';
import { Instance } from '../../src/accounting/instance.js';
import type { UsageCounts, UsageScope, UsageShard, UsageStore } from '../../src/store/ports.js';
import { ManualClock } from '../support/clocks.js';

const ZERO: UsageCounts = { requests: 0, inputTokens: 0, outputTokens: 0, spendMicros: 0 };

/** Keeps each writer's absolute totals per counter, as the adapters do. */
class KeepingStore implements Pick<UsageStore, 'putUsageShards' | 'getUsageShards' | 'getUsage'> {
  readonly shards = new Map<string, UsageCounts>();
  reads = 0;
  private readonly key = (writer: string, s: Pick<UsageShard, 'scope' | 'id' | 'period'>) => `${writer}|${s.scope}|${s.id}|${s.period}`;
  async putUsageShards(writer: string, _seq: number, shards: UsageShard[]): Promise<void> {
    for (const s of shards) this.shards.set(this.key(writer, s), { requests: s.requests, inputTokens: s.inputTokens, outputTokens: s.outputTokens, spendMicros: s.spendMicros });
  }
  async getUsageShards(writer: string, counters: Array<Pick<UsageShard, 'scope' | 'id' | 'period'>>): Promise<UsageCounts[]> {
    this.reads += counters.length;
    return counters.map((c) => ({ ...(this.shards.get(this.key(writer, c)) ?? ZERO) }));
  }
  async getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    const sum = { ...ZERO };
    for (const [k, v] of this.shards) {
      const [, s, i, p] = k.split('|');
      if (s !== scope || i !== id || (period !== undefined && p !== period)) continue;
      sum.requests += v.requests;
      sum.inputTokens += v.inputTokens;
      sum.outputTokens += v.outputTokens;
      sum.spendMicros += v.spendMicros;
    }
    return sum;
  }
}

const silent = { debug() {}, info() {}, warn() {}, error() {}, isLevelEnabled: () => false };
const event = (tokenId: string, model = 'gpt-4o-mini'): UsageEvent => ({ orgId: 'org_1', credentialId: 'cred_1', tokenId, requests: 1, inputTokens: 10, outputTokens: 5, spendMicros: 7, model });

function recorder(clock: ManualClock): { usage: UsageRecorder; store: KeepingStore } {
  const store = new KeepingStore();
  return { usage: new UsageRecorder(store as unknown as UsageStore, clock, silent, clock, new Instance()), store };
}

test('a request counts once in each of its seven counters', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 12, 0, 0));
  const { usage, store } = recorder(clock);
  usage.record(event('tok_a'));
  usage.record(event('tok_a'));
  await usage.flush();
  t.is(store.shards.size, 7);
  for (const [key, counts] of store.shards) t.deepEqual(counts, { requests: 2, inputTokens: 20, outputTokens: 10, spendMicros: 14 }, key);
  await usage.close();
});

test('a counter let go of and counted again reads its stored totals back: nothing lost, nothing twice', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 12, 0, 0));
  const { usage, store } = recorder(clock);
  usage.record(event('tok_a'));
  await usage.flush();
  // Ten minutes and more without tok_a: the next flush (another token's) lets tok_a's counters go.
  clock.advance(11 * 60_000);
  usage.record(event('tok_b'));
  await usage.flush();
  const readsBefore = store.reads;
  usage.record(event('tok_a'));
  await usage.flush();
  t.true(store.reads > readsBefore, 'tok_a\'s counters were read back');
  t.is((await store.getUsage('tok', 'tok_a')).requests, 2);
  t.is((await store.getUsage('org', 'org_1')).requests, 3);
  t.is((await usage.get('tok', 'tok_a')).requests, 2);
  await usage.close();
});

test('a new day starts new day counters and keeps adding to the month', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 23, 59, 59, 900));
  const { usage, store } = recorder(clock);
  usage.record(event('tok_a'));
  clock.advance(200);
  usage.record(event('tok_a'));
  await usage.flush();
  t.is((await store.getUsage('org', 'org_1', '2026-11')).requests, 2);
  t.is((await store.getUsage('org-day', 'org_1', '2026-11-15')).requests, 1);
  t.is((await store.getUsage('org-day', 'org_1', '2026-11-16')).requests, 1);
  t.is((await store.getUsage('model-day', 'org_1/gpt-4o-mini', '2026-11-16')).requests, 1);
  await usage.close();
});
