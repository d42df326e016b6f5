import { t, type Static } from 'elysia'
import { MAX_CONDITIONS, MAX_DEPTH, MAX_INDEXED_SEGMENTS, OPERATORS, FIELD_TYPES } from './rules'
import { enumOf, NameString, Timestamps } from '../../http/schemas'

/**
 * The rule tree is checked by the compiler (./rules.ts), not by the schema: its messages
 * name the exact place in the tree (`rules.all.1.value`), and a schema for a recursive
 * union would report every branch it tried.
 */
export const RulesSchema = t.Unknown({
  description: [
    'A rule tree. A group is {"all": [...]} (every item matches) or {"any": [...]} (at least one does); the root is a group.',
    'Items are groups or conditions: {"field": "status", "op": "eq", "value": "subscribed"}, {"in_list": 3}, {"not_in_list": 3}.',
    'Fields: email, first_name, last_name, status, list_id, created_at, updated_at and fields.<custom field key>.',
    `Groups nest at most ${MAX_DEPTH} deep; at most ${MAX_CONDITIONS} conditions. See the segments section of the API guide for operators by type.`,
  ].join(' '),
  examples: [
    {
      all: [
        { field: 'status', op: 'eq', value: 'subscribed' },
        { field: 'created_at', op: 'gte', value: { days_ago: 30 } },
        { any: [{ field: 'fields.plan', op: 'eq', value: 'pro' }, { in_list: 2 }] },
      ],
    },
  ],
})

const INDEXED_HELP = [
  'Keep the members in an index of their own, so that counts and pages of members read only that index',
  '(a few milliseconds on a million contacts instead of a scan of them all), at the cost of a little work on every contact write.',
  'Building it reads every contact once, before the answer. Not for rules with relative dates, in_list or not_in_list;',
  `at most ${MAX_INDEXED_SEGMENTS} segments are indexed at once.`,
].join(' ')

export const SegmentSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  description: t.String(),
  rules: RulesSchema,
  indexed: t.Boolean({ description: INDEXED_HELP }),
  ...Timestamps,
})
export type SegmentView = Static<typeof SegmentSchema>

export const CreateSegmentBody = t.Object({
  name: NameString(),
  description: t.Optional(t.String({ maxLength: 2000 })),
  rules: RulesSchema,
  indexed: t.Optional(t.Boolean({ description: `${INDEXED_HELP} Default false.` })),
})

export const UpdateSegmentBody = t.Partial(CreateSegmentBody)

export const PreviewSegmentBody = t.Object({ rules: RulesSchema })

export const CountSchema = t.Object({ count: t.Integer({ description: 'Contacts matching the rules now.' }) })

/** A field a condition may name, with what the rule compiler accepts for it (a rule builder's menus). */
export const SegmentFieldSchema = t.Object({
  field: t.String({ description: 'The value of a condition\'s "field": email, status, ..., or fields.<custom field key>.' }),
  name: t.String({ description: "A name for people: the custom field's name, or the built-in field's." }),
  type: enumOf(FIELD_TYPES, { description: 'Decides the operators and the form of values (API guide, segments).' }),
  operators: t.Array(enumOf(OPERATORS)),
  options: t.Union([t.Array(t.String()), t.Null()], { description: 'The allowed values of a status or one_of field; null otherwise.' }),
})
