/**
 * Pools: POST /v1/pools, PATCH, the pool view (each member with its health) and lists. What a schema
 * cannot say stays with the pool service and is named in the descriptions: members exist in this
 * organisation (404) and share one provider (400 `invalid_request`).
 */
import { Type } from '@sinclair/typebox';
import { IdOf, listOf, Name, named, Time } from './common.js';
import { bodyContract, rule } from './validate.js';

export const PoolStrategy = named('PoolStrategy', rule(Type.Union([Type.Literal('round_robin'), Type.Literal('ordered'), Type.Literal('least_busy')], {
  description: '`round_robin`: members in turn by `weight`; `ordered`: the first healthy member in the listed order; `least_busy`: the healthy member with the fewest requests in flight on this instance. A cooling member is skipped by every strategy.',
}), 'one of "round_robin", "ordered", "least_busy"'));

const PoolMemberInput = Type.Object({
  credential_id: rule(Type.String({ minLength: 1, maxLength: 64, description: 'A stored credential of this organisation (else 404); all members share one provider (else 400).' }), 'the id of a stored credential'),
  weight: Type.Optional(rule(Type.Integer({ minimum: 1, maximum: 100, description: 'Its share under `round_robin` (default 1).' }), 'an integer from 1 to 100')),
}, { additionalProperties: false });

const Members = rule(Type.Array(PoolMemberInput, { minItems: 1, maxItems: 16, description: '1 to 16 distinct credentials of one provider.' }), 'an array of 1 to 16 members');

export const PoolCreate = named('PoolCreate', Type.Object({
  name: Type.Optional(Name),
  members: Members,
  strategy: Type.Optional(PoolStrategy),
}, {
  additionalProperties: false,
  examples: [{ name: 'openai keys', strategy: 'round_robin', members: [{ credential_id: 'cred_4kT9bQ2mXw7Zr1sVc8NpL3aY' }, { credential_id: 'cred_5mU0cR3nYx8As2tWd9OqM4bZ', weight: 2 }] }],
}));

export const PoolUpdate = named('PoolUpdate', Type.Object({
  name: Type.Optional(rule(Type.Union([Name, Type.Null()], { description: 'The new name, or null to remove it.' }), 'a name, or null to remove it')),
  members: Type.Optional(Members),
  strategy: Type.Optional(PoolStrategy),
}, { additionalProperties: false, examples: [{ strategy: 'ordered' }] }));

export const PoolMemberView = named('PoolMember', Type.Object({
  credential_id: IdOf('cred', 'The member credential.'),
  weight: Type.Integer({ minimum: 1, maximum: 100 }),
  cooling_until: Type.Union([Time, Type.Null()], { description: 'Skipped by every instance until then (it answered 429/529, for its Retry-After; 5 s after a 5xx or a connection error); null: not cooling.' }),
  recent: Type.Object({
    '429': Type.Integer({ minimum: 0 }),
    '5xx': Type.Integer({ minimum: 0 }),
    errors: Type.Integer({ minimum: 0, description: 'Connection errors and timeouts.' }),
  }, { additionalProperties: false, description: 'Its attempts\' outcomes over the last five minutes on the instance that answers.' }),
}, { additionalProperties: false }));

export const Pool = named('Pool', Type.Object({
  id: IdOf('pool', 'The pool\'s id.'),
  object: Type.Literal('pool'),
  name: Type.Optional(Name),
  provider: Type.String({ description: 'Its members\' provider.' }),
  strategy: PoolStrategy,
  members: Type.Array(PoolMemberView),
  created_at: Time,
  updated_at: Time,
}, { additionalProperties: false, description: 'A set of credentials of one provider a pooled token (`pool_id`) spreads its requests over, failing over before the first response byte.' }));

export const PoolList = listOf('PoolList', Pool, 'Pools.');

export const PoolDeleted = named('PoolDeleted', Type.Object({
  id: Type.String(), object: Type.Literal('pool'), deleted: Type.Literal(true),
}, { additionalProperties: false }));

export const POOL_CREATE = bodyContract(PoolCreate);
export const POOL_UPDATE = bodyContract(PoolUpdate);
