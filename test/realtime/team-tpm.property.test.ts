/**
 * Property: a realtime session's responses under a token's and its team's `tokens_per_minute` together
 * (src/gateway/realtime/limits.ts: `tokensPerMinuteLimit` and `teamTokensPerMinuteLimit` in one ResponseLimits,
 * all or none). Random runs: three instances (lease keepers over one in-memory LeaseStore, one manual clock that is
 * also their timers) hold responses for three tokens of one team, each with its own cap or none; a response is
 * held at its worst case, then ends with what it used, is cut (its worst case stands), or never starts (given back);
 * store writes fail; instances are killed mid-flight (what they held is used all the same); the clock moves by up
 * to two windows. A response's tokens count from when it was held. After every step, no 60 s holds more than the
 * team's cap across its tokens, nor more than a token's cap for that token; a refused response leaves nothing held
 * under its token (all or none).
 *
 * fast-check (test/support/property.ts): a failure shrinks to the shortest run and prints its seed and path.
 * `npm test` runs 4 runs of up to 600 steps; `npm run test:fuzz` more (KEYWARD_FUZZ_COUNT steps).
 */
import 'reflect-metadata';
import test from 'ava';
import fc from 'fast-check';
import { TokenLimits, tpmKey } from '../../src/accounting/token-limits.js';
import type { LeaseKeeper } from '../../src/accounting/lease-keeper.js';
import { ResponseLimits, teamTokensPerMinuteLimit, tokensPerMinuteLimit, type Hold, type SessionParty } from '../../src/gateway/realtime/limits.js';
import { ROLLING_WINDOW_MS } from '../../src/store/ports.js';
import { faultyWorld, keeperOn, writeFault } from '../support/leases.js';
import { atRate, checkProperty, die, dieFor, envInt, landsOn, type Produced, type Weighted } from '../support/property.js';

const STEPS = envInt('KEYWARD_FUZZ_COUNT', 600);
const RUNS = process.env.KEYWARD_FUZZ_COUNT ? 16 : 4;
const TTL = 10_000;
const TEAM = 'team_property';

interface Response {
  token: number;
  at: number;
  worst: number;
  hold: Hold;
  /** What it counts for now: its worst case while open or cut, what it used once ended, 0 when given back. */
  tokens: number;
}

interface Instance {
  keeper: LeaseKeeper;
  limits: TokenLimits;
  open: Response[];
  dead: boolean;
}

const ACTS: Weighted<'hold' | 'end' | 'kill' | 'tick' | 'clock'> = [[45, 'hold'], [30, 'end'], [2, 'kill'], [8, 'tick'], [15, 'clock']];
/** How an open response ends: with what it used, cut (no final usage), or never started. */
const ENDS: Weighted<'used' | 'cut' | 'refund'> = [[70, 'used'], [15, 'cut'], [15, 'refund']];

/** One step, drawn as dice: who acts, its store fault, what it does, and the numbers it needs (per mille). */
const step = fc.tuple(die(3), die(3), writeFault, dieFor(ACTS), dieFor(ENDS), die(1000), die(1001), die(1000), die(1000)).map(([who, token, fault, roll, ends, x, u, y, w]) => {
  const kind = landsOn(roll, ACTS);
  const act = kind === 'hold' ? { do: kind, token, share: x, big: atRate(y, 0.2) }
    : kind === 'end' ? { do: kind, which: x, how: landsOn(ends, ENDS), used: u }
    : kind === 'clock' ? { do: kind, ms: Math.floor((x * (atRate(y, 0.2) ? 2 * ROLLING_WINDOW_MS : TTL / 2)) / 1000) }
    : { do: kind };
  return { who, fault, revive: atRate(w, 0.2), act };
});
type Step = Produced<typeof step>;

const scenario = fc.noBias(fc.record({
  teamCap: fc.integer({ min: 200, max: 3000 }),
  /** Each token's own cap, or none (undefined). */
  tokenCaps: fc.tuple(...[0, 1, 2].map(() => fc.option(fc.integer({ min: 100, max: 3000 }), { nil: undefined }))),
  steps: fc.array(step, { minLength: 1, maxLength: STEPS, size: 'max' }),
}));

const totals = { steps: 0, held: 0, refused: 0, nearTeamCap: 0 };

async function run({ teamCap, tokenCaps, steps }: { teamCap: number; tokenCaps: Array<number | undefined>; steps: Step[] }): Promise<void> {
  const { clock, store, faults } = faultyWorld();
  const team = { budgetMicros: null, tokensPerMinute: teamCap };
  const teams = { peekTeam: () => team, teamLimit: async () => team };
  const spawn = (): Instance => {
    const keeper = keeperOn(store, clock, TTL);
    return { keeper, limits: new TokenLimits(keeper, clock, clock), open: [], dead: false };
  };
  const instances = [spawn(), spawn(), spawn()];
  const party = (token: number): SessionParty => ({
    tokenId: `tok_property${token}`, orgId: 'org_property', tokenBudget: undefined, teamId: TEAM,
    scopes: tokenCaps[token] === undefined ? {} : { tokensPerMinute: tokenCaps[token] },
  });
  /** What the instance holds reserved (in flight) in the token's window now. */
  const reservedUnder = (inst: Instance, token: number): number => inst.keeper.peek(tpmKey(party(token).tokenId))?.reserved ?? 0;
  const all: Response[] = [];
  let most = 0;
  const inWindow = (token?: number) => {
    const now = clock.now();
    return all.reduce((n, r) => n + ((token === undefined || r.token === token) && now - r.at < ROLLING_WINDOW_MS ? r.tokens : 0), 0);
  };
  for (const [i, s] of steps.entries()) {
    const inst = instances[s.who]!;
    faults(s.fault);
    const act = s.act;
    if (inst.dead) {
      if (s.revive) instances[s.who] = spawn();
    } else if (act.do === 'hold') {
      const worst = 1 + Math.floor((act.share * teamCap * (act.big ? 0.6 : 0.1)) / 1000);
      const limits = new ResponseLimits([tokensPerMinuteLimit(inst.limits), teamTokensPerMinuteLimit(inst.limits, teams)], party(act.token));
      const tokenBefore = reservedUnder(inst, act.token);
      try {
        const hold = await limits.hold({ inputTokens: worst, outputTokens: 0, micros: 0 });
        const response = { token: act.token, at: clock.now(), worst, hold, tokens: worst };
        all.push(response);
        inst.open.push(response);
        totals.held++;
      } catch {
        totals.refused++; // tokens_per_minute_exceeded (the token's or the team's), or the store unreachable
        // All or none: a response the team refused after its token held it leaves nothing held under the token.
        const tokenAfter = reservedUnder(inst, act.token);
        if (tokenAfter !== tokenBefore) throw new Error(`step ${i}: a refused response kept ${tokenAfter - tokenBefore} tokens reserved under its token`);
      }
    } else if (act.do === 'end') {
      if (inst.open.length > 0) {
        const r = inst.open.splice(act.which % inst.open.length, 1)[0]!;
        if (act.how === 'refund') {
          r.hold.refund();
          r.tokens = 0;
        } else if (act.how === 'cut') {
          r.hold.settle(undefined);
        } else {
          r.tokens = Math.floor((act.used * (r.worst + 1)) / 1001);
          r.hold.settle({ usage: { inputTokens: r.tokens, outputTokens: 0 }, micros: 0 });
        }
      }
    } else if (act.do === 'kill') {
      inst.dead = true; // SIGKILL: its open responses used their worst cases; it never settles nor retires
    } else if (act.do === 'tick') {
      await inst.keeper.tick();
    } else if (act.do === 'clock') {
      await clock.tick(act.ms);
      for (const other of instances) if (!other.dead) await other.keeper.tick();
    }
    const teamNow = inWindow();
    most = Math.max(most, teamNow);
    if (teamNow > teamCap) throw new Error(`step ${i} (${act.do}): the team's tokens within 60 s ${teamNow} > its cap ${teamCap}`);
    for (const [token, cap] of tokenCaps.entries()) {
      if (cap !== undefined && inWindow(token) > cap) throw new Error(`step ${i} (${act.do}): token ${token}'s tokens within 60 s ${inWindow(token)} > its cap ${cap}`);
    }
  }
  if (most >= teamCap / 2) totals.nearTeamCap++;
  totals.steps += steps.length;
}

test(`a team's and its tokens' tokens_per_minute on realtime responses, all or none, across instances, kills, write faults and clock jumps: no 60 s past either cap (${RUNS} runs of up to ${STEPS} steps)`, async (t) => {
  if (!(await checkProperty(t, fc.asyncProperty(scenario, run), { numRuns: RUNS }))) return;
  t.log(`${totals.steps} steps: ${totals.held} responses held, ${totals.refused} refused, half the team's cap or more within 60 s in ${totals.nearTeamCap} runs`);
  t.true(totals.held > totals.steps / 100, 'the runs held responses');
  t.true(totals.refused > 0, 'a cap was reached');
  t.true(totals.nearTeamCap > 0, 'the team\'s cap was approached');
});
