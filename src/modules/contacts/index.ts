import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { BulkDeleteBody, BulkDeleteResult, commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, requires } from '../../http/schemas'
import { AppError, notFound } from '../../lib/errors'
import { grants } from '../permissions/catalog'
import { BatchAddBody, BatchAddResult, ContactSchema, CreateContactBody, ListContactsQuery, UpdateContactBody } from './model'
import { batchAddContacts, contactCreateProblems, createContact, deleteContacts, getContact, listContacts, updateContact } from './service'

const tags = ['contacts']

/** /api/v2/contacts (spec "Contact", "Endpoints", "Batch and bulk operations"). */
export function contactRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/contacts' })
    .post(
      '/',
      ({ body, request, status }) => {
        const auth = authOf(request)
        const contact = createContact(deps, body, auth.key.id)
        auth.target = { type: 'contacts', id: contact.id }
        return status(201, ok(contact))
      },
      {
        body: CreateContactBody,
        response: { 201: Envelope(ContactSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('contacts.create', 'Create a contact', {
          tags,
          description: 'The address must be valid and the list must exist (422 otherwise); an address already on the list is 409.',
          check: (body) => contactCreateProblems(deps, body),
        }),
      },
    )
    .get('/', ({ query }) => okPage(listContacts(deps, query)), {
      query: ListContactsQuery,
      response: { 200: Paged(ContactSchema), ...commonErrors },
      detail: requires('contacts.read', 'List contacts', {
        tags,
        description: 'Filter by list_id, status, exact email, email prefix (search), or one custom field value.',
      }),
    })
    .get('/:id', ({ params }) => ok(getContact(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(ContactSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('contacts.read', 'Get a contact', { tags }),
    })
    .patch('/:id', ({ params, body, request }) => ok(updateContact(deps, params.id, body, authOf(request).key.id)), {
      params: IdParams,
      body: UpdateContactBody,
      response: { 200: Envelope(ContactSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('contacts.update', 'Update a contact', { tags }),
    })
    .delete(
      '/:id',
      ({ params }) => {
        const contact = getContact(deps, params.id)
        if (!deleteContacts(deps, [params.id]).deleted.length) throw notFound('contact', params.id)
        return ok(contact)
      },
      {
        params: IdParams,
        response: { 200: Envelope(ContactSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('contacts.delete', 'Delete a contact', { tags }),
      },
    )
    .post(
      '/batch',
      ({ body, request }) => {
        const auth = authOf(request)
        if (body.mode === 'update' && !grants(auth.key.permissions, 'contacts.update')) {
          throw new AppError('forbidden', 'mode update changes existing contacts, which needs the contacts.update permission.')
        }
        return ok(batchAddContacts(deps, body, auth.key.id))
      },
      {
        body: BatchAddBody,
        response: { 200: Envelope(BatchAddResult), ...commonErrors },
        detail: requires('contacts.create', 'Add up to 1,000 contacts to a list', {
          tags,
          description:
            'One transaction; answers per entry: created, updated (mode update), skipped (already on the list, or repeated in the request) or invalid with the reasons. Needs contacts.update too when mode is update.',
        }),
      },
    )
    .post('/batch-delete', ({ body }) => ok(deleteContacts(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('contacts.delete', 'Delete up to 1,000 contacts', { tags }),
    })
}
