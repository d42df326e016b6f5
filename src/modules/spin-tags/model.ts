import { t, type Static } from 'elysia'
import { MAX_ALTERNATIVE_LENGTH, MAX_ALTERNATIVES, MIN_ALTERNATIVES, SPIN_TAG_NAME_PATTERN } from './rules'
import { Timestamps } from '../../http/schemas'

export const SpinTagSchema = t.Object({
  id: t.Integer(),
  name: t.String({ description: 'Used in templates as {{spin "name"}}.' }),
  alternatives: t.Array(t.String()),
  ...Timestamps,
})
export type SpinTagView = Static<typeof SpinTagSchema>

const Alternatives = t.Array(t.String({ minLength: 1, maxLength: MAX_ALTERNATIVE_LENGTH }), {
  minItems: MIN_ALTERNATIVES,
  maxItems: MAX_ALTERNATIVES,
  description: `${MIN_ALTERNATIVES} to ${MAX_ALTERNATIVES} non-empty strings; one is chosen per recipient. Repeat one to make it more likely.`,
})

export const CreateSpinTagBody = t.Object({
  name: t.String({
    pattern: SPIN_TAG_NAME_PATTERN,
    maxLength: 63,
    description: 'Lower-case identifier (a letter, then letters, digits, underscores), unique; cannot change later.',
  }),
  alternatives: Alternatives,
})

export const UpdateSpinTagBody = t.Object({
  name: t.Optional(t.String({ description: 'Cannot change; accepted only when equal to the current name.' })),
  alternatives: t.Optional(Alternatives),
})
