import { and, eq, inArray } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { suppressions } from '../../db/schema'
import type { Deps } from '../../deps'
import { requires } from '../../http/schemas'
import { checkEmail } from '../../lib/email'
import { AppError } from '../../lib/errors'
import type { SuppressionView } from '../suppressions/model'
import { addSuppressions, deleteSuppression, getSuppression, listSuppressions, removeSuppressions } from '../suppressions/service'
import { cursorPage, encodeId, ListOf, PaginationQuery, tryDecodeId } from './ids'
import { refuse } from './shapes'

/**
 * resend.suppressions onto /api/v2/suppressions. Resend's suppressions are account-wide
 * addresses: Mailroom's global, email-type entries. List- and program-scoped entries and
 * domain entries exist only natively and are not shown here.
 */

type Origin = 'bounce' | 'complaint' | 'manual'
/** Our reason -> Resend's origin (unsubscribes and imports were put there by someone: manual). */
const ORIGIN: Record<string, Origin> = { hard_bounce: 'bounce', complaint: 'complaint' }
const REASONS_OF: Record<Origin, string[]> = { bounce: ['hard_bounce'], complaint: ['complaint'], manual: ['manual', 'unsubscribe', 'import'] }

const Entry = t.Object({
  id: t.String(),
  email: t.String(),
  origin: t.String(),
  source_id: t.Null(),
  created_at: t.String(),
})
const Ack = t.Object({ object: t.Literal('suppression'), id: t.String() })
const Removed = t.Composite([Ack, t.Object({ deleted: t.Boolean() })])

const isAccountWide = (v: SuppressionView) => v.scope === 'global' && v.type === 'email'

function entryOf(v: SuppressionView) {
  return { id: encodeId('suppression', v.id), email: v.value, origin: ORIGIN[v.reason] ?? 'manual', source_id: null, created_at: v.created_at }
}

/** The account-wide suppression of an address, or null. */
function findByEmail(deps: Deps, email: string): SuppressionView | null {
  const r = checkEmail(email)
  if (!r.ok) return null
  return listSuppressions(deps, { scope: 'global', type: 'email', search: r.email, per_page: 100 }).items.find((v) => v.value === r.email) ?? null
}

/** An id (ours, encoded) or an address, as the SDK's get and remove take either. */
function find(deps: Deps, idOrEmail: string): SuppressionView {
  const id = tryDecodeId('suppression', idOrEmail)
  let v: SuppressionView | null = null
  if (id !== null) {
    try {
      v = getSuppression(deps, id)
    } catch (e) {
      if (!(e instanceof AppError)) throw e
    }
  } else v = findByEmail(deps, idOrEmail)
  if (!v || !isAccountWide(v)) throw new AppError('not_found', 'Suppression not found.')
  return v
}

/** Adds addresses (one transaction, the native batch) and answers their entries' ids. */
function add(deps: Deps, emails: string[]): string[] {
  const r = addSuppressions(deps, { type: 'email', entries: emails, reason: 'manual' })
  if (r.invalid.length) refuse(r.invalid.length === 1 && emails.length === 1 ? 'email' : 'emails', r.invalid.map((i) => `${i.entry} ${i.reason}`).join('; '))
  return emails.map((e) => encodeId('suppression', findByEmail(deps, e)!.id))
}

/** /compat/resend/suppressions */
export function suppressionRoutes(deps: Deps) {
  const tags = ['resend-compatible']
  return new Elysia()
    .post('/suppressions', ({ body }) => ({ object: 'suppression' as const, id: add(deps, [body.email])[0]! }), {
      body: t.Object({ email: t.String({ minLength: 1 }) }),
      response: { 200: Ack },
      detail: requires('suppressions.create', 'Suppress an address (Resend-compatible)', { tags }),
    })
    .post('/suppressions/batch/add', ({ body }) => ({ data: add(deps, body.emails).map((id) => ({ object: 'suppression' as const, id })) }), {
      body: t.Object({ emails: t.Array(t.String({ minLength: 1 }), { minItems: 1, maxItems: 1000 }) }),
      response: { 200: t.Object({ data: t.Array(Ack) }) },
      detail: requires('suppressions.create', 'Suppress several addresses (Resend-compatible)', { tags }),
    })
    .post(
      '/suppressions/batch/remove',
      ({ body }) => {
        if ((body.emails === undefined) === (body.ids === undefined)) refuse('emails', 'send either `emails` or `ids`')
        const found = (body.emails ?? body.ids ?? []).map((key) => {
          try {
            return find(deps, key)
          } catch (e) {
            if (e instanceof AppError && e.code === 'not_found') return null
            throw e
          }
        })
        const values = found.flatMap((v) => (v ? [v.value] : []))
        if (values.length) removeSuppressions(deps, { type: 'email', entries: values })
        return {
          data: found.map((v, i) => ({ object: 'suppression' as const, id: v ? encodeId('suppression', v.id) : (body.ids?.[i] ?? ''), deleted: v !== null })),
        }
      },
      {
        body: t.Object({
          emails: t.Optional(t.Array(t.String({ minLength: 1 }), { minItems: 1, maxItems: 1000 })),
          ids: t.Optional(t.Array(t.String({ minLength: 1 }), { minItems: 1, maxItems: 1000 })),
        }),
        response: { 200: t.Object({ data: t.Array(Removed) }) },
        detail: requires('suppressions.delete', 'Lift several suppressions (Resend-compatible)', { tags }),
      },
    )
    .get(
      '/suppressions',
      ({ query }) => {
        const where = and(
          eq(suppressions.scope, 'global'),
          eq(suppressions.type, 'email'),
          query.origin === undefined ? undefined : inArray(suppressions.reason, REASONS_OF[query.origin]),
        )
        const page = cursorPage(deps.db, suppressions, 'suppression', query, where)
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => entryOf(getSuppression(deps, i))) }
      },
      {
        query: t.Object({ ...PaginationQuery.properties, origin: t.Optional(t.Union([t.Literal('bounce'), t.Literal('complaint'), t.Literal('manual')])) }),
        response: { 200: ListOf(Entry) },
        detail: requires('suppressions.read', 'List suppressed addresses (Resend-compatible)', { tags }),
      },
    )
    .get('/suppressions/:id', ({ params }) => ({ object: 'suppression' as const, ...entryOf(find(deps, params.id)) }), {
      response: { 200: t.Composite([t.Object({ object: t.Literal('suppression') }), Entry]) },
      detail: requires('suppressions.read', 'Get a suppression by id or address (Resend-compatible)', { tags }),
    })
    .delete(
      '/suppressions/:id',
      ({ params }) => {
        const v = deleteSuppression(deps, find(deps, params.id).id)
        return { object: 'suppression' as const, id: encodeId('suppression', v.id), deleted: true }
      },
      { response: { 200: Removed }, detail: requires('suppressions.delete', 'Lift a suppression by id or address (Resend-compatible)', { tags }) },
    )
}
