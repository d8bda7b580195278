/**
 * Teams: POST /v1/teams, PATCH, the team view and lists; PATCH /v1/members/:id's `budget_usd` and the member
 * budget view. What a schema cannot say stays with the team service and is named in the descriptions:
 * credentials and pools exist in this organisation (404), `max_ttl` is within KEYWARD_MAX_TTL (400).
 */
import { Type } from '@sinclair/typebox';
import { USD_AMOUNT } from '../../pricing/money.js';
import { IdOf, listOf, Name, named, Time } from './common.js';
import { TokensPerMinuteScope, Ttl } from './tokens.js';
import { Usd } from './usage.js';
import { bodyContract, rule, usdNumberHint } from './validate.js';

const MonthlyBudget = (whose: string) => rule(Type.String({
  pattern: USD_AMOUNT.source,
  description: `${whose} monthly spend cap in US dollars (UTC calendar month; a decimal string, at most six places, above 0). A request of ${whose === 'The team\'s' ? 'any of its tokens' : 'its tokens'} reserves its worst case under it, as under every other level it belongs to (token, member, team, organisation), and is settled on each; one that does not fit → 429 \`budget_exhausted\` (\`detail.cap\`: \`${whose === 'The team\'s' ? 'team' : 'member'}.budget_usd\`). Exact across instances.`,
  examples: ['500.00'],
}), 'a decimal string of US dollars above 0 with at most six decimal places, such as "500.00"', undefined, usdNumberHint('budget_usd'));

const orNull = <T extends Parameters<typeof Type.Union>[0][number]>(t: T, what: string) => rule(Type.Union([t, Type.Null()], { description: `${what}, or null to remove it.` }), `${what.toLowerCase()}, or null`);

const MemberIds = rule(Type.Array(Type.String({ pattern: '^usr_[0-9A-Za-z]{1,64}$' }), {
  maxItems: 1000, description: 'Its members, by id (`usr_…`), at most 1000.',
}), 'an array of at most 1000 member ids (usr_…)');
const Groups = rule(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
  maxItems: 100, description: 'Groups of the organisation\'s identity provider (as its groups claim names them) whose members belong to the team, at most 100.',
}), 'an array of at most 100 group names');
const Ids = (prefix: string, what: string) => rule(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: 100, description: `The ${what} (\`${prefix}_…\` ids of this organisation, else 404) a token of the team may be minted for, at most 100.`,
}), `an array of at most 100 ${what} ids`);

const teamFields = {
  members: Type.Optional(MemberIds),
  groups: Type.Optional(Groups),
  credentials: Type.Optional(Ids('cred', 'credentials')),
  pools: Type.Optional(Ids('pool', 'pools')),
};

export const TeamCreate = named('TeamCreate', Type.Object({
  name: Name,
  ...teamFields,
  budget_usd: Type.Optional(MonthlyBudget('The team\'s')),
  tokens_per_minute: Type.Optional(TokensPerMinuteScope),
  max_ttl: Ttl,
}, {
  additionalProperties: false,
  examples: [{ name: 'platform', members: ['usr_4kT9bQ2mXw7Zr1sVc8NpL3aY'], budget_usd: '500.00', tokens_per_minute: 200000, credentials: ['cred_4kT9bQ2mXw7Zr1sVc8NpL3aY'], max_ttl: '8h' }],
}));

export const TeamUpdate = named('TeamUpdate', Type.Object({
  name: Type.Optional(Name),
  ...teamFields,
  budget_usd: Type.Optional(orNull(MonthlyBudget('The team\'s'), 'The team\'s monthly budget')),
  tokens_per_minute: Type.Optional(orNull(TokensPerMinuteScope, 'The team\'s tokens per minute')),
  max_ttl: Type.Optional(Ttl),
}, { additionalProperties: false, examples: [{ budget_usd: '750.00' }] }));

export const Team = named('Team', Type.Object({
  id: IdOf('team', 'The team\'s id.'),
  object: Type.Literal('team'),
  name: Name,
  members: Type.Array(Type.String()),
  groups: Type.Array(Type.String()),
  credentials: Type.Array(Type.String()),
  pools: Type.Array(Type.String()),
  budget_usd: Type.Optional(Usd),
  tokens_per_minute: Type.Optional(Type.Integer({ minimum: 1 })),
  max_ttl: Type.String({ description: 'The longest lifetime of a token of the team, in seconds (`<n>s`).' }),
  spend: Type.Optional(Type.Object({ used: Usd, held: Usd }, {
    additionalProperties: false,
    description: 'With a budget, on a single team\'s read: this month\'s `used` and `held` (worst cases in flight, leased amounts not yet used) from the ledger its refusals read; `budget_usd − used − held` is what a new request can still reserve.',
  })),
  created_at: Time,
  updated_at: Time,
}, { additionalProperties: false, description: 'A team: people (members or groups) with a monthly budget and tokens_per_minute shared by all their tokens, and the credentials and pools those tokens may use.' }));

export const TeamList = listOf('TeamList', Team, 'Teams.');

export const TeamDeleted = named('TeamDeleted', Type.Object({
  id: Type.String(), object: Type.Literal('team'), deleted: Type.Literal(true),
}, { additionalProperties: false }));

export const MemberBudgetChange = named('MemberBudgetChange', Type.Object({
  budget_usd: orNull(MonthlyBudget('The member\'s'), 'The member\'s monthly budget'),
}, { additionalProperties: false, examples: [{ budget_usd: '100.00' }] }));

export const MemberBudgetView = named('MemberBudget', Type.Object({
  id: Type.String({ description: 'The member\'s id (`usr_…`).' }),
  object: Type.Literal('member'),
  budget_usd: Type.Union([Usd, Type.Null()], { description: 'The member\'s monthly budget; null: none.' }),
}, { additionalProperties: false }));

export const TEAM_CREATE = bodyContract(TeamCreate);
export const TEAM_UPDATE = bodyContract(TeamUpdate);
export const MEMBER_BUDGET_CHANGE = bodyContract(MemberBudgetChange);
