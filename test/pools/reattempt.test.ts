/**
 * The parts of a pooled attempt's settlement, alone: the router tells the exit whether a failed attempt may
 * have been billed (no answer after the whole body) or not (an answer, a body not sent whole, a connection
 * refused), and makes the next attempt only when the exit says every cap took its reservation, else answers
 * the caller with the member's failure; the pipeline's `reattempt` either leaves a reservation at every cap or
 * at none (a stage that reserved again gives it back when a later one does not fit), synchronously while
 * every stage answers at once; the exit charges a billed attempt once, and gives back what was reserved for a
 * next attempt the caller left before (waiting for a reservation still on its way). The whole path over HTTP is
 * test/pools/settlement.test.ts.
 */
import test from 'ava';
import { EventEmitter } from 'node:events';
import { ApiError } from '../../src/errors.js';
import { Pipeline, type CoreStage } from '../../src/gateway/pipeline/pipeline.js';
import { PoolRouter, type Failover } from '../../src/gateway/upstream/pool-router.js';
import { Exchange, type ExitServices, type UpstreamLeg } from '../../src/gateway/exit/exchange.js';
import { RequestContext } from '../../src/gateway/entry/context.js';
import type { Logger } from '../../src/log.js';

const warnings: unknown[] = [];
const log = { warn: (o: unknown) => warnings.push(o) } as unknown as Logger;

/** A stage holding one reservation (`held`): reattempt charges it, then reserves again if `fits`; undo gives back. */
function capStage(name: string, priority: number, fits: boolean | 'async-yes' | 'async-no' | 'throws', events: string[]): CoreStage {
  return {
    name, priority,
    access: () => undefined,
    reattempt(_ctx, reserve) {
      events.push(`${name}:charge`);
      if (!reserve) return false;
      if (fits === 'throws') throw new Error('store down');
      const answer = fits === 'async-yes' || fits === 'async-no' ? Promise.resolve(fits === 'async-yes') : fits;
      const note = (ok: boolean) => {
        events.push(`${name}:${ok ? 'reserved' : 'refused'}`);
        return ok;
      };
      return answer instanceof Promise ? answer.then(note) : note(answer);
    },
    undo: () => { events.push(`${name}:undo`); },
  };
}

const ctx = { requestId: 'req_test', state: new Map() } as unknown as RequestContext;

test('pipeline reattempt: every cap takes the next reservation → true at once, nothing undone', (t) => {
  const events: string[] = [];
  const p = new Pipeline([capStage('tpm', 130, true, events), capStage('budget', 120, true, events), { name: 'quota', priority: 100, access: () => undefined, undo: () => { events.push('quota:undo'); } }], log);
  t.is(p.reattempt(ctx), true);
  t.deepEqual(events, ['tpm:charge', 'tpm:reserved', 'budget:charge', 'budget:reserved'], 'quota counts once: no hook, no undo');
});

test('pipeline reattempt: a later cap that does not fit → the earlier one gives its new reservation back; the rest charge only', (t) => {
  const events: string[] = [];
  const p = new Pipeline([capStage('a', 140, true, events), capStage('b', 130, false, events), capStage('c', 120, true, events)], log);
  t.is(p.reattempt(ctx), false);
  t.deepEqual(events, ['a:charge', 'a:reserved', 'b:charge', 'b:refused', 'a:undo', 'c:charge']);
});

test('pipeline reattempt: a stage that waits for its store, then does not fit → a promise of false, with the same undo', async (t) => {
  const events: string[] = [];
  const p = new Pipeline([capStage('a', 140, 'async-yes', events), capStage('b', 130, 'async-no', events), capStage('c', 120, true, events)], log);
  const answer = p.reattempt(ctx);
  t.true(answer instanceof Promise);
  t.is(await answer, false);
  t.deepEqual(events, ['a:charge', 'a:reserved', 'b:charge', 'b:refused', 'a:undo', 'c:charge']);
  const ok = new Pipeline([capStage('a', 140, true, []), capStage('b', 130, 'async-yes', [])], log);
  t.is(await ok.reattempt(ctx), true);
});

test('pipeline reattempt: a throwing hook counts as not fitting (logged), never as room', (t) => {
  const events: string[] = [];
  warnings.length = 0;
  const p = new Pipeline([capStage('a', 140, true, events), capStage('b', 130, 'throws', events)], log);
  t.is(p.reattempt(ctx), false);
  t.deepEqual(events, ['a:charge', 'a:reserved', 'b:charge', 'a:undo']);
  t.is(warnings.length, 1);
  const undone: string[] = [];
  new Pipeline([capStage('a', 140, true, undone), capStage('b', 130, true, undone)], log).undoReattempt(ctx);
  t.deepEqual(undone, ['b:undo', 'a:undo'], 'a next attempt never sent: each cap gives back what it holds, in reverse');
});

/** A pooled request over two members, on fakes: what the exit was told and what was sent. */
function pooledRequest(fits: boolean | Promise<boolean>) {
  const told: boolean[] = [];
  const failed: ApiError[] = [];
  const sends: Failover[] = [];
  const res = Object.assign(new EventEmitter(), { destroyed: false });
  const member = (id: string) => ({ id, orgId: 'org_1', weight: 1 });
  const pool = { id: 'pool_1', strategy: 'ordered', members: [member('cred_a'), member('cred_b')], cooling: {} };
  const exchange = {
    ctx: { auth: { pool, credential: member('cred_a') }, bodyFollows: false, tokenId: 'tok_1' },
    req: { headers: {} },
    res,
    get gone() { return res.destroyed; },
    reattempt(billed: boolean) {
      told.push(billed);
      return fits;
    },
    fail(err: ApiError) { failed.push(err); },
    abandon() {},
  } as unknown as Exchange;
  const pools = { track() {}, coolingUntil: () => 0, cool() {}, record() {} };
  const router = new PoolRouter(
    { pools: { attempts: 3, retryBodyMax: 1024 } } as never, { secretsFor: () => ({}) } as never, pools as never,
    { poolAttempt() {} } as never, () => 0, { take: () => true, release() {} } as never,
    { attempt: (_exchange, _credential, failover) => { sends.push(failover!); } },
  );
  router.route(exchange);
  return { told, failed, sends, exchange };
}

const turn = () => new Promise((r) => setImmediate(r));

test('router: a timeout after the whole body is billed; a 429 or a connection refused (nothing sent whole) is not', async (t) => {
  for (const [status, timeout, sentWhole, billed] of [[undefined, true, true, true], [undefined, false, true, true], [429, false, true, false], [503, false, true, false], [undefined, false, false, false], [undefined, true, false, false]] as const) {
    const r = pooledRequest(true);
    t.is(r.sends.length, 1);
    t.true(r.sends[0]!.retry(status, undefined, timeout, sentWhole), 'another member takes it over');
    await turn();
    t.deepEqual(r.told, [billed], `${status ?? (timeout ? 'timeout' : 'reset')} sent whole: ${sentWhole}`);
    t.is(r.sends.length, 2, 'the next member is sent the request');
    t.deepEqual(r.failed, []);
  }
});

test('router: when the next reservation does not fit (at once or after the store), no next attempt: the member\'s failure goes to the caller', async (t) => {
  for (const fits of [false, Promise.resolve(false)]) {
    const timedOut = pooledRequest(fits);
    t.true(timedOut.sends[0]!.retry(undefined, undefined, true, true));
    await turn();
    t.is(timedOut.sends.length, 1, 'no second member');
    t.is(timedOut.failed.length, 1);
    t.is(timedOut.failed[0]!.code, 'upstream_timeout');
    const reset = pooledRequest(fits);
    t.true(reset.sends[0]!.retry(undefined, undefined, false, true));
    await turn();
    t.is(reset.sends.length, 1);
    t.is(reset.failed[0]!.code, 'upstream_unreachable');
  }
  // The caller left while the store answered: nothing more is sent, nothing answered.
  let resolve!: (fits: boolean) => void;
  const gone = pooledRequest(new Promise<boolean>((r) => { resolve = r; }));
  t.true(gone.sends[0]!.retry(undefined, undefined, true, true));
  await turn();
  (gone.exchange.res as unknown as { destroyed: boolean }).destroyed = true;
  resolve(true);
  await turn();
  t.is(gone.sends.length, 1);
  t.deepEqual(gone.failed, []);
});

/** An exchange of a budgeted pooled request on fakes, after its first attempt went out: the stage and what was recorded. */
function exchangeOf(fits: boolean | Promise<boolean>) {
  const events: string[] = [];
  const stage: CoreStage = {
    name: 'budget', priority: 120,
    access: () => undefined,
    reattempt() {
      events.push('charge');
      return fits instanceof Promise ? fits.then((ok) => { events.push(ok ? 'reserved' : 'refused'); return ok; }) : fits;
    },
    undo: (ctx) => {
      events.push('undo');
      (ctx as { reservedMicros: number | undefined }).reservedMicros = undefined;
    },
    log: (ctx) => { events.push(`log spent ${ctx.spentMicros} earlier ${ctx.earlierAttemptsMicros}`); },
  };
  const pipeline = new Pipeline([stage], log);
  const records: Array<{ credentialId: string; requests: number; spendMicros: number }> = [];
  const exit = {
    log, pipeline,
    usage: { record: (e: { credentialId: string; requests: number; spendMicros: number }) => records.push({ credentialId: e.credentialId, requests: e.requests, spendMicros: e.spendMicros }) },
    metrics: { spent() {}, proxied() {}, refused() {} },
    prices: { prices: () => undefined, match: () => undefined },
    unpriced: { observe() {} },
  } as unknown as ExitServices;
  const req = Object.assign(new EventEmitter(), { method: 'POST', headers: {}, rawHeaders: [], httpVersionMajor: 1 });
  const res = Object.assign(new EventEmitter(), { destroyed: false, headersSent: false, statusCode: 200 });
  const ctx = new RequestContext(req as never, res as never, 'req_x', 'v1/chat/completions', '', '127.0.0.1', true);
  ctx.auth = { token: { id: 'tok_1' }, credential: { id: 'cred_a', orgId: 'org_1' } } as never;
  ctx.provider = { id: 'openai' } as never;
  ctx.model = 'gpt-4o-mini';
  ctx.reservedMicros = 500;
  ctx.attempts = [{ credentialId: 'cred_a', outcome: 'timeout' }];
  ctx.passed = 1;
  const exchange = new Exchange(exit, ctx, req as never, res as never);
  const leg: UpstreamLeg = { sent: true, abandon() {}, ended: () => undefined };
  exchange.forwarded(leg);
  const leave = () => {
    res.destroyed = true;
    res.emit('close');
  };
  return { exchange, ctx, events, records, leave };
}

test('exit: a billed attempt is charged once on its member; the caller leaving before the next attempt gives its reservation back', async (t) => {
  const x = exchangeOf(true);
  t.is(x.exchange.reattempt(true), true);
  t.is(x.ctx.earlierAttemptsMicros, 500);
  t.deepEqual(x.records, [{ credentialId: 'cred_a', requests: 0, spendMicros: 500 }], 'the failed member\'s charge, counted now');
  x.leave();
  await turn();
  t.deepEqual(x.events, ['charge', 'undo', 'log spent 500 earlier 500'], 'the next attempt\'s reservation back; the request spent the earlier charge');
  t.deepEqual(x.records.at(-1), { credentialId: 'cred_a', requests: 1, spendMicros: 0 }, 'counted once for requests, the charge not twice');
});

test('exit: the caller leaving while the next reservation waits for the store: the end waits for it, then gives it back', async (t) => {
  let resolve!: (ok: boolean) => void;
  const x = exchangeOf(new Promise<boolean>((r) => { resolve = r; }));
  const answer = x.exchange.reattempt(true);
  t.true(answer instanceof Promise);
  x.leave();
  await turn();
  t.deepEqual(x.events, ['charge'], 'the end has not run yet');
  resolve(true);
  t.is(await answer, true);
  await turn();
  t.deepEqual(x.events, ['charge', 'reserved', 'undo', 'log spent 500 earlier 500']);
});

test('exit: an attempt that cost nothing (429) carries its reservation; a caller who leaves then gets it back, nothing spent', async (t) => {
  const x = exchangeOf(true);
  t.is(x.exchange.reattempt(false), true);
  t.is(x.ctx.earlierAttemptsMicros, 0);
  t.deepEqual(x.records, []);
  x.leave();
  await turn();
  t.deepEqual(x.events, ['undo', 'log spent undefined earlier 0'], 'no charge hook: the reservation went back whole');
});
