import { Elysia, t } from 'elysia'
import { customFields } from '../../db/schema'
import type { Deps } from '../../deps'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import type { CustomFieldView } from '../custom-fields/model'
import { createCustomField, deleteCustomFields, getCustomField, updateCustomField } from '../custom-fields/service'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery } from './ids'
import { deleted, refuse } from './shapes'

/**
 * resend.contactProperties onto custom fields. Resend's `string` is a text field, `number` a
 * number field, `fallback_value` the field's default. Mailroom's date, boolean and one-of
 * fields show as `string` here. Keys follow Mailroom's rule (lower snake case).
 */

const Property = t.Object({
  id: t.String(),
  key: t.String(),
  type: t.Union([t.Literal('string'), t.Literal('number')]),
  fallback_value: t.Union([t.String(), t.Number(), t.Null()]),
  created_at: t.String(),
})
const Ack = t.Object({ object: t.Literal('contact_property'), id: t.String() })

function propertyOf(v: CustomFieldView) {
  const number = v.type === 'number'
  const d = v.default_value
  return {
    id: encodeId('contact_property', v.id),
    key: v.key,
    type: number ? ('number' as const) : ('string' as const),
    fallback_value: d === null ? null : number ? (d as number) : String(d),
    created_at: v.created_at,
  }
}

function field(deps: Deps, id: string): number {
  const n = decodeId('contact_property', id, 'contact property')
  try {
    getCustomField(deps, n)
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', 'Contact property not found.')
    throw e
  }
  return n
}

const Fallback = t.Union([t.String(), t.Number(), t.Null()])

/** /compat/resend/contact-properties */
export function contactPropertyRoutes(deps: Deps) {
  const tags = ['resend-compatible']
  return new Elysia()
    .post(
      '/contact-properties',
      ({ body }) => {
        if (body.fallback_value != null && typeof body.fallback_value !== (body.type === 'number' ? 'number' : 'string'))
          refuse('fallback_value', `must be a ${body.type} for a ${body.type} property`)
        const v = createCustomField(deps, {
          key: body.key,
          name: body.key,
          type: body.type === 'number' ? 'number' : 'text',
          default_value: body.fallback_value ?? null,
        })
        return { object: 'contact_property' as const, id: encodeId('contact_property', v.id) }
      },
      {
        body: t.Object({
          key: t.String({ minLength: 1, maxLength: 63 }),
          type: t.Union([t.Literal('string'), t.Literal('number')]),
          fallback_value: t.Optional(Fallback),
        }),
        response: { 200: Ack },
        detail: requires('custom_fields.create', 'Create a contact property (Resend-compatible; a custom field)', { tags }),
      },
    )
    .get(
      '/contact-properties',
      ({ query }) => {
        const page = cursorPage(deps.db, customFields, 'contact_property', query)
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => propertyOf(getCustomField(deps, i))) }
      },
      {
        query: PaginationQuery,
        response: { 200: ListOf(Property) },
        detail: requires('custom_fields.read', 'List contact properties (Resend-compatible)', { tags }),
      },
    )
    .get('/contact-properties/:id', ({ params }) => ({ object: 'contact_property' as const, ...propertyOf(getCustomField(deps, field(deps, params.id))) }), {
      response: { 200: t.Composite([t.Object({ object: t.Literal('contact_property') }), Property]) },
      detail: requires('custom_fields.read', 'Get a contact property (Resend-compatible)', { tags }),
    })
    .patch(
      '/contact-properties/:id',
      ({ params, body }) => {
        updateCustomField(deps, field(deps, params.id), { default_value: body.fallback_value })
        return { object: 'contact_property' as const, id: params.id }
      },
      {
        body: t.Object({ fallback_value: t.Optional(Fallback) }),
        response: { 200: Ack },
        detail: requires('custom_fields.update', 'Change the fallback value of a contact property (Resend-compatible)', { tags }),
      },
    )
    .delete(
      '/contact-properties/:id',
      ({ params }) => {
        deleteCustomFields(deps, [field(deps, params.id)])
        return deleted('contact_property', params.id)
      },
      {
        response: { 200: t.Composite([Ack, t.Object({ deleted: t.Boolean() })]) },
        detail: requires('custom_fields.delete', 'Remove a contact property and its values (Resend-compatible)', { tags }),
      },
    )
}
