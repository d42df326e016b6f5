import { eq } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { contacts } from '../../db/schema'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import type { ContactView } from '../contacts/model'
import { createContact, deleteContacts, getContact, listContacts, updateContact } from '../contacts/service'
import { getList } from '../lists/service'
import { cursorPage, encodeId, ListOf, PaginationQuery, tryDecodeId } from './ids'
import { OLDEST_OF_ITS_ADDRESS } from './queries'
import { defaultList, SegmentSchema, segmentList, segmentOf } from './segments'
import { refuse } from './shapes'

/**
 * resend.contacts (and contacts.segments) onto Mailroom's contacts. A Mailroom contact is one
 * address on one list; a Resend contact is one address in any number of segments (lists).
 * So a Resend contact is the set of Mailroom contacts with its address: reads show the oldest
 * of them (its id is the contact's id), changes and deletes apply to all of them, and
 * adding the contact to a segment adds a Mailroom contact with the same names and fields to
 * that list. A contact made without a segment goes to the "General" list (segments.ts).
 * The legacy `/audiences/{id}/contacts` paths work on the one Mailroom contact on that list.
 */

const ContactSchema = t.Object({
  id: t.String(),
  email: t.String(),
  first_name: t.Union([t.String(), t.Null()]),
  last_name: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
  unsubscribed: t.Boolean(),
})
const PropertyValue = t.Object({ type: t.String(), value: t.Union([t.String(), t.Number()]) })
const FullContact = t.Composite([t.Object({ object: t.Literal('contact') }), ContactSchema, t.Object({ properties: t.Record(t.String(), PropertyValue) })])
const Ack = t.Object({ object: t.Literal('contact'), id: t.String() })
const Properties = t.Record(t.String(), t.Union([t.String(), t.Number(), t.Boolean(), t.Null()]))
const CreateBody = {
  email: t.String({ minLength: 1 }),
  first_name: t.Optional(t.Union([t.String(), t.Null()])),
  last_name: t.Optional(t.Union([t.String(), t.Null()])),
  unsubscribed: t.Optional(t.Boolean()),
  properties: t.Optional(Properties),
}
const UpdateBody = t.Object({
  first_name: t.Optional(t.Union([t.String(), t.Null()])),
  last_name: t.Optional(t.Union([t.String(), t.Null()])),
  unsubscribed: t.Optional(t.Boolean()),
  properties: t.Optional(Properties),
})
type Update = typeof UpdateBody.static

function contactOf(v: ContactView) {
  return {
    id: encodeId('contact', v.id),
    email: v.email,
    first_name: v.first_name,
    last_name: v.last_name,
    created_at: v.created_at,
    unsubscribed: v.status === 'unsubscribed',
  }
}

/** Custom field values as Resend's typed properties (Mailroom's dates and choices are strings there). */
function propertiesOf(v: ContactView) {
  return Object.fromEntries(
    Object.entries(v.fields).map(([k, value]) => [k, typeof value === 'number' ? { type: 'number', value } : { type: 'string', value: String(value) }]),
  )
}

const full = (v: ContactView) => ({ object: 'contact' as const, ...contactOf(v), properties: propertiesOf(v) })

/** Every Mailroom contact of a Resend contact named by id or address, oldest first; not_found when none. */
function rowsOf(deps: Deps, idOrEmail: string): ContactView[] {
  const id = tryDecodeId('contact', idOrEmail)
  let email = idOrEmail
  if (id !== null) {
    try {
      email = getContact(deps, id).email
    } catch (e) {
      if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', 'Contact not found.')
      throw e
    }
  }
  const rows = listContacts(deps, { email, per_page: 100 }).items
  if (rows.length === 0) throw new AppError('not_found', 'Contact not found.')
  return rows
}

/** The Mailroom contact of an address or id on one list; not_found when it is not there. */
function rowOn(deps: Deps, idOrEmail: string, listId: number): ContactView {
  const row = rowsOf(deps, idOrEmail).find((r) => r.list_id === listId)
  if (!row) throw new AppError('not_found', 'Contact not found.')
  return row
}

/** Resend's change -> the contacts service's, for one Mailroom contact. */
function apply(deps: Deps, row: ContactView, b: Update, actorKeyId: number | null): ContactView {
  return updateContact(
    deps,
    row.id,
    {
      first_name: b.first_name,
      last_name: b.last_name,
      status: b.unsubscribed === undefined ? undefined : b.unsubscribed ? 'unsubscribed' : 'subscribed',
      fields: b.properties,
    },
    actorKeyId,
  )
}

/** /compat/resend/contacts, /compat/resend/segments/{id}/contacts, /compat/resend/audiences/{id}/contacts */
export function contactRoutes(deps: Deps, authOf: AuthOf) {
  const tags = ['resend-compatible']
  const actor = (request: Request) => authOf(request).key?.id ?? null
  const create = (
    b: { email: string; first_name?: string | null; last_name?: string | null; unsubscribed?: boolean; properties?: Record<string, unknown> },
    listId: number,
    actorKeyId: number | null,
  ) =>
    createContact(
      deps,
      {
        list_id: listId,
        email: b.email,
        first_name: b.first_name ?? undefined,
        last_name: b.last_name ?? undefined,
        status: b.unsubscribed ? 'unsubscribed' : 'subscribed',
        fields: b.properties,
      },
      actorKeyId,
    )
  const listed = (query: typeof PaginationQuery.static, listId?: number) => {
    const page = cursorPage(deps.db, contacts, 'contact', query, listId === undefined ? OLDEST_OF_ITS_ADDRESS : eq(contacts.list_id, listId))
    return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => contactOf(getContact(deps, i))) }
  }
  const removeAll = (rows: ContactView[], idOrEmail: string) => {
    deleteContacts(
      deps,
      rows.map((r) => r.id),
    )
    return { object: 'contact' as const, contact: idOrEmail, deleted: true }
  }
  const Removed = t.Object({ object: t.Literal('contact'), contact: t.String(), deleted: t.Boolean() })
  return (
    new Elysia()
      .post(
        '/contacts',
        ({ body, request }) => {
          if (body.topics !== undefined) refuse('topics', 'topics are not available; use segments (lists)')
          const listIds = body.segments?.length ? body.segments.map((s) => segmentList(deps, s.id)) : [defaultList(deps)]
          const first = create(body, listIds[0]!, actor(request))
          for (const listId of listIds.slice(1)) create(body, listId, actor(request))
          return { object: 'contact' as const, id: encodeId('contact', first.id) }
        },
        {
          body: t.Object({
            ...CreateBody,
            segments: t.Optional(t.Array(t.Object({ id: t.String() }), { maxItems: 100 })),
            topics: t.Optional(t.Array(t.Unknown())),
          }),
          response: { 200: Ack },
          detail: requires('contacts.create', 'Create a contact (Resend-compatible)', { tags }),
        },
      )
      .get('/contacts', ({ query }) => listed(query), {
        query: PaginationQuery,
        response: { 200: ListOf(ContactSchema) },
        detail: requires('contacts.read', 'List contacts (Resend-compatible)', { tags, description: 'Each address once, by its oldest Mailroom contact.' }),
      })
      .get('/segments/:id/contacts', ({ params, query }) => listed(query, segmentList(deps, params.id)), {
        query: PaginationQuery,
        response: { 200: ListOf(ContactSchema) },
        detail: requires('contacts.read', "List a segment's contacts (Resend-compatible)", { tags }),
      })
      .get('/contacts/:id', ({ params }) => full(rowsOf(deps, params.id)[0]!), {
        response: { 200: FullContact },
        detail: requires('contacts.read', 'Get a contact by id or address (Resend-compatible)', { tags }),
      })
      .patch(
        '/contacts/:id',
        ({ params, body, request }) => {
          const rows = rowsOf(deps, params.id)
          // The same values go to each list's contact: values the service refuses are refused at the first, before anything changed.
          for (const r of rows) apply(deps, r, body, actor(request))
          return { object: 'contact' as const, id: encodeId('contact', rows[0]!.id) }
        },
        { body: UpdateBody, response: { 200: Ack }, detail: requires('contacts.update', 'Update a contact by id or address (Resend-compatible)', { tags }) },
      )
      .delete('/contacts/:id', ({ params }) => removeAll(rowsOf(deps, params.id), params.id), {
        response: { 200: Removed },
        detail: requires('contacts.delete', 'Remove a contact from every segment (Resend-compatible)', { tags }),
      })
      // contacts.segments
      .get(
        '/contacts/:id/segments',
        ({ params, query }) => {
          const all = rowsOf(deps, params.id).map((r) => segmentOf(getList(deps, r.list_id)))
          const limit = query.limit ?? 20
          return { object: 'list' as const, has_more: all.length > limit, data: all.slice(0, limit) }
        },
        {
          query: PaginationQuery,
          response: { 200: ListOf(SegmentSchema) },
          detail: requires('contacts.read', "List a contact's segments (Resend-compatible)", { tags }),
        },
      )
      .post(
        '/contacts/:id/segments/:segment_id',
        ({ params, request }) => {
          const listId = segmentList(deps, params.segment_id)
          const rows = rowsOf(deps, params.id)
          if (!rows.some((r) => r.list_id === listId)) {
            const r = rows[0]!
            createContact(
              deps,
              {
                list_id: listId,
                email: r.email,
                first_name: r.first_name ?? undefined,
                last_name: r.last_name ?? undefined,
                status: r.status,
                fields: r.fields,
              },
              actor(request),
            )
          }
          return { id: params.segment_id }
        },
        { response: { 200: t.Object({ id: t.String() }) }, detail: requires('contacts.create', 'Add a contact to a segment (Resend-compatible)', { tags }) },
      )
      .delete(
        '/contacts/:id/segments/:segment_id',
        ({ params }) => {
          const listId = segmentList(deps, params.segment_id)
          deleteContacts(deps, [rowOn(deps, params.id, listId).id])
          return { id: params.segment_id, audienceId: params.segment_id, deleted: true }
        },
        {
          response: { 200: t.Object({ id: t.String(), audienceId: t.String(), deleted: t.Boolean() }) },
          detail: requires('contacts.delete', 'Remove a contact from a segment (Resend-compatible)', { tags }),
        },
      )
      // The deprecated audience-scoped paths: one list's contact.
      .post(
        '/audiences/:audience_id/contacts',
        ({ params, body, request }) => ({
          object: 'contact' as const,
          id: encodeId('contact', create(body, segmentList(deps, params.audience_id), actor(request)).id),
        }),
        {
          body: t.Object(CreateBody),
          response: { 200: Ack },
          detail: requires('contacts.create', 'Create a contact in an audience (Resend-compatible)', { tags }),
        },
      )
      .get('/audiences/:audience_id/contacts/:id', ({ params }) => full(rowOn(deps, params.id, segmentList(deps, params.audience_id))), {
        response: { 200: FullContact },
        detail: requires('contacts.read', 'Get a contact of an audience (Resend-compatible)', { tags }),
      })
      .patch(
        '/audiences/:audience_id/contacts/:id',
        ({ params, body, request }) => {
          const row = rowOn(deps, params.id, segmentList(deps, params.audience_id))
          apply(deps, row, body, actor(request))
          return { object: 'contact' as const, id: encodeId('contact', row.id) }
        },
        { body: UpdateBody, response: { 200: Ack }, detail: requires('contacts.update', 'Update a contact of an audience (Resend-compatible)', { tags }) },
      )
      .delete('/audiences/:audience_id/contacts/:id', ({ params }) => removeAll([rowOn(deps, params.id, segmentList(deps, params.audience_id))], params.id), {
        response: { 200: Removed },
        detail: requires('contacts.delete', 'Remove a contact from an audience (Resend-compatible)', { tags }),
      })
  )
}
