import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { BulkDeleteBody, BulkDeleteResult, commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { notFound } from '../../lib/errors'
import { CreateCustomFieldBody, CustomFieldSchema, UpdateCustomFieldBody } from './model'
import { createCustomField, deleteCustomFields, getCustomField, listCustomFields, updateCustomField } from './service'

const tags = ['custom fields']

/** /api/v2/custom-fields: the profile fields contacts carry, with types checked on every write. */
export function customFieldRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/custom-fields' })
    .post(
      '/',
      ({ body, request, status }) => {
        const field = createCustomField(deps, body)
        authOf(request).target = { type: 'custom_fields', id: field.id }
        return status(201, ok(field))
      },
      {
        body: CreateCustomFieldBody,
        response: { 201: Envelope(CustomFieldSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('custom_fields.create', 'Create a custom field', { tags }),
      },
    )
    .get('/', ({ query }) => okPage(listCustomFields(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(CustomFieldSchema), ...commonErrors },
      detail: requires('custom_fields.read', 'List custom fields', { tags }),
    })
    .get('/:id', ({ params }) => ok(getCustomField(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(CustomFieldSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('custom_fields.read', 'Get a custom field', { tags }),
    })
    .patch('/:id', ({ params, body }) => ok(updateCustomField(deps, params.id, body)), {
      params: IdParams,
      body: UpdateCustomFieldBody,
      response: { 200: Envelope(CustomFieldSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('custom_fields.update', 'Update a custom field', {
        tags,
        description:
          'The key and type cannot change. Removing a one_of option still in use, or making a field required while contacts lack a value, is refused with 409.',
      }),
    })
    .delete(
      '/:id',
      ({ params }) => {
        const field = getCustomField(deps, params.id)
        if (!deleteCustomFields(deps, [params.id]).deleted.length) throw notFound('custom field', params.id)
        return ok(field)
      },
      {
        params: IdParams,
        response: { 200: Envelope(CustomFieldSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('custom_fields.delete', 'Delete a custom field', { tags, description: 'Also removes the values contacts hold for it.' }),
      },
    )
    .post('/bulk-delete', ({ body }) => ok(deleteCustomFields(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('custom_fields.delete', 'Delete several custom fields', { tags, description: 'Also removes the values contacts hold for them.' }),
    })
}
