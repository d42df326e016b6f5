import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import { trackEvents } from '../automations/service'
import { listContacts } from '../contacts/service'
import { encodeId, ListOf, PaginationQuery, tryDecodeId } from './ids'
import { eventNamePage, eventNameByName, eventNameById, type EventName } from './queries'
import { defaultList } from './segments'
import { refuse } from './shapes'

/**
 * resend.events onto Mailroom's custom events (POST /api/v2/track, issue 16). `send` records
 * an event for a contact through the native track service, which starts triggers and ends
 * waits for it. Resend's other methods manage event *definitions* (a name with a payload
 * schema, declared before use); Mailroom takes any event name without one and has no payload
 * schemas, so `get` and `list` show the names it has received (an id is that of the name's
 * first event) and `create`, `update` and `remove` are refused by name (422).
 */

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])
const EventSchema = t.Object({ id: t.String(), name: t.String(), schema: t.Null(), created_at: t.String(), updated_at: Nullable(t.String()) })

const Sent = t.Object({ object: t.Literal('event'), event: t.String() })
// What Resend answers to the definition calls; never sent here (they are refused), declared for the contract.
const Ack = t.Object({ object: t.Literal('event'), id: t.String() })

const viewOf = (e: EventName) => ({
  id: encodeId('event', e.id),
  name: e.name,
  schema: null,
  created_at: new Date(e.created_at).toISOString(),
  updated_at: null,
})

/** An event name by Resend id or by name; not_found when Mailroom has received no such event. */
function eventOf(deps: Deps, identifier: string) {
  const id = tryDecodeId('event', identifier)
  const found = id === null ? eventNameByName(deps.db, identifier) : eventNameById(deps.db, id)
  if (!found) throw new AppError('not_found', 'Event not found.')
  return { object: 'event' as const, ...viewOf(found) }
}

const NO_DEFINITIONS = 'Mailroom takes any event name without a definition, and has no payload schemas: send the event (events.send)'

/** /compat/resend/events */
export function eventRoutes(deps: Deps, authOf: AuthOf) {
  const tags = ['resend-compatible']
  return new Elysia()
    .post(
      '/events/send',
      async ({ body, request, status }) => {
        if ((body.email === undefined) === (body.contact_id === undefined)) refuse('email', 'give exactly one of email and contact_id')
        const auth = authOf(request)
        // Data coming in, not a change of settings (as /api/v2/track): no activity-log row per event.
        auth.logged = true
        let contactId: number | undefined
        if (body.contact_id !== undefined) {
          const n = tryDecodeId('contact', body.contact_id)
          if (n === null) throw new AppError('not_found', 'Contact not found.')
          contactId = n
        }
        // Resend creates the contact of an unknown address; here it joins the list of contacts created without a segment.
        const unknown = body.email !== undefined && listContacts(deps, { email: body.email, per_page: 1 }).items.length === 0
        const key = request.headers.get('idempotency-key')
        await trackEvents(
          deps,
          auth.key?.id ?? null,
          [
            {
              event: body.event,
              ...(contactId !== undefined ? { contact_id: contactId } : { email: body.email }),
              properties: body.payload,
              ...(unknown ? { create_contact: true, list_id: defaultList(deps) } : {}),
            },
          ],
          key && key.length <= 256 ? key : null,
        )
        return status(202, { object: 'event' as const, event: body.event })
      },
      {
        body: t.Object({
          event: t.String({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f]+$' }),
          email: t.Optional(t.String({ minLength: 3, maxLength: 254 })),
          contact_id: t.Optional(t.String()),
          payload: t.Optional(t.Record(t.String({ maxLength: 200 }), t.Unknown())),
        }),
        // Resend answers 202 (accepted); 200 is declared too, as every route of this surface does.
        response: { 200: Sent, 202: Sent },
        detail: requires('triggers.track', 'Send an event for a contact (Resend-compatible)', {
          tags,
          description:
            'Onto POST /api/v2/track: starts automations (triggers) on this event and ends waits for it. An unknown address becomes a contact of the General list.',
        }),
      },
    )
    .post('/events', () => refuse('name', NO_DEFINITIONS), {
      body: t.Object({ name: t.String(), schema: t.Optional(t.Unknown()) }),
      response: { 200: Ack },
      detail: requires('triggers.create', 'Create an event definition (Resend-compatible): not applicable, 422', { tags }),
    })
    .get(
      '/events',
      ({ query }) => {
        const page = eventNamePage(deps.db, query)
        return { object: 'list' as const, has_more: page.has_more, data: page.rows.map(viewOf) }
      },
      {
        query: PaginationQuery,
        response: { 200: ListOf(EventSchema) },
        detail: requires('triggers.read', 'The event names received (Resend-compatible)', {
          tags,
          description: 'Newest name first; the id is that of its first event.',
        }),
      },
    )
    .get('/events/:identifier', ({ params }) => eventOf(deps, params.identifier), {
      response: { 200: t.Composite([t.Object({ object: t.Literal('event') }), EventSchema]) },
      detail: requires('triggers.read', 'An event name received, by id or name (Resend-compatible)', { tags }),
    })
    .patch('/events/:identifier', () => refuse('schema', NO_DEFINITIONS), {
      body: t.Object({ schema: t.Optional(t.Unknown()) }),
      response: { 200: Ack },
      detail: requires('triggers.update', 'Update an event definition (Resend-compatible): not applicable, 422', { tags }),
    })
    .delete('/events/:identifier', () => refuse('identifier', NO_DEFINITIONS), {
      response: { 200: t.Composite([Ack, t.Object({ deleted: t.Boolean() })]) },
      detail: requires('triggers.delete', 'Remove an event definition (Resend-compatible): not applicable, 422', { tags }),
    })
}
