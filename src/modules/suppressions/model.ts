import { t, type Static } from 'elysia'
import { PROGRAM_TYPES, SUPPRESSION_SCOPES, SUPPRESSION_TYPES } from '../../db/schema'
import { enumOf } from '../../http/schemas'

/**
 * Why an entry is suppressed: a closed list, so that reports and later automation (bounce
 * and complaint processing, unsubscribe links, imports) can rely on the values. `manual` is
 * the spec's; the others name the sources a later issue writes from: a permanent failure
 * (RFC 3464 status 5.x.x), a feedback-loop complaint (RFC 5965), an unsubscribe (RFC 8058
 * one-click or a link), and a bulk import of an existing suppression list.
 */
export const SUPPRESSION_REASONS = ['manual', 'hard_bounce', 'complaint', 'unsubscribe', 'import'] as const
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number]

/** Entries per batch request: large enough for a real list clean-up, small enough for one transaction of well under a second. */
export const MAX_BATCH_ENTRIES = 10_000

const Scope = enumOf(SUPPRESSION_SCOPES, { description: 'global: every send; list: sends to one list; program: one broadcast, drip or trigger.' })
const Type = enumOf(SUPPRESSION_TYPES, { description: 'email: one address; domain: every address at exactly that domain (not its subdomains).' })
const ProgramType = enumOf(PROGRAM_TYPES)
const Reason = enumOf(SUPPRESSION_REASONS, { description: 'Why the entries are suppressed.' })

export const SuppressionSchema = t.Object({
  id: t.Integer(),
  scope: Scope,
  list_id: t.Union([t.Integer(), t.Null()], { description: 'Set when scope is list.' }),
  program_type: t.Union([ProgramType, t.Null()], { description: 'Set when scope is program.' }),
  program_id: t.Union([t.Integer(), t.Null()], { description: 'Set when scope is program.' }),
  type: Type,
  value: t.String({ description: 'The address or domain, normalised: trimmed, lower case, domains in ASCII (punycode) form.' }),
  reason: Reason,
  created_at: t.String({ format: 'date-time' }),
})
/** A suppression on the wire. */
export type SuppressionView = Static<typeof SuppressionSchema>

/** Scope fields shared by batch add and batch delete; null is the same as absent. */
const ScopeFields = {
  scope: t.Optional(Scope),
  list_id: t.Optional(t.Union([t.Integer({ minimum: 1 }), t.Null()], { description: 'Required when scope is list; the list must exist.' })),
  program_type: t.Optional(t.Union([ProgramType, t.Null()], { description: 'Required when scope is program.' })),
  program_id: t.Optional(t.Union([t.Integer({ minimum: 1 }), t.Null()], { description: 'Required when scope is program.' })),
}

const Entries = t.Array(t.String(), {
  minItems: 1,
  maxItems: MAX_BATCH_ENTRIES,
  description: `Addresses (type email) or domains (type domain), 1 to ${MAX_BATCH_ENTRIES}. Case and surrounding spaces do not matter.`,
})

export const BatchAddBody = t.Object({ type: Type, reason: Reason, entries: Entries, ...ScopeFields })
export const BatchDeleteBody = t.Object({ type: Type, entries: Entries, ...ScopeFields })

const InvalidEntries = t.Array(
  t.Object({ entry: t.String({ description: 'The entry as sent.' }), reason: t.String({ description: 'What is wrong with it.' }) }),
)

export const BatchAddResultSchema = t.Object({
  added: t.Integer({ description: 'Entries stored by this request.' }),
  skipped: t.Integer({ description: 'Entries already suppressed in this scope, and repeats within the request.' }),
  invalid: InvalidEntries,
})

export const BatchDeleteResultSchema = t.Object({
  removed: t.Integer({ description: 'Suppressions lifted by this request.' }),
  not_found: t.Integer({ description: 'Valid entries not suppressed in this scope (repeats within the request included).' }),
  invalid: InvalidEntries,
})

/** The list's filters beside page and per_page. */
export const SuppressionFilters = {
  scope: t.Optional(Scope),
  list_id: t.Optional(t.Integer({ minimum: 1 })),
  program_type: t.Optional(ProgramType),
  program_id: t.Optional(t.Integer({ minimum: 1 })),
  type: t.Optional(Type),
  reason: t.Optional(Reason),
  search: t.Optional(t.String({ maxLength: 254, description: 'Values starting with this text (case-insensitive), e.g. "jane@" or "example.".' })),
}
