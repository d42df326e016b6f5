import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ok, requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import { grants } from '../permissions/service'
import { BatchAddBody, BatchAddResult, ContactFilters, ContactSchema, CreateContactBody, UpdateContactBody } from './model'
import { batchAddContacts, contactCreateProblems, createContact, deleteContacts, getContact, listContacts, updateContact } from './service'

const tags = ['contacts']

/** /api/v2/contacts (spec "Contact", "Endpoints", "Batch and bulk operations"). */
export function contactRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'contacts',
    view: ContactSchema,
    create: {
      summary: 'Create a contact',
      description: 'The address must be valid and the list must exist (422 otherwise); an address already on the list is 409.',
      errors: [409],
      body: CreateContactBody,
      check: (body) => contactCreateProblems(deps, body),
      handle: (body, ctx) => createContact(deps, body, ctx.auth().key?.id ?? null),
    },
    list: {
      summary: 'List contacts',
      description: 'Filter by list_id, status, exact email, email prefix (search), or one custom field value.',
      query: ContactFilters,
      handle: (query) => listContacts(deps, query),
    },
    get: { summary: 'Get a contact', handle: (id) => getContact(deps, id) },
    update: {
      summary: 'Update a contact',
      errors: [409],
      body: UpdateContactBody,
      handle: (id, body, ctx) => updateContact(deps, id, body, ctx.auth().key?.id ?? null),
    },
    remove: { summary: 'Delete a contact' },
    // The spec names this one batch-delete (beside /batch), not bulk-delete.
    bulkDelete: { summary: 'Delete up to 1,000 contacts', path: '/batch-delete', handle: (ids) => deleteContacts(deps, ids) },
  }).post(
    '/batch',
    ({ body, request }) => {
      const auth = authOf(request)
      if (body.mode === 'update' && !grants(auth.actor.permissions, 'contacts.update')) {
        throw new AppError('forbidden', 'mode update changes existing contacts, which needs the contacts.update permission.')
      }
      return ok(batchAddContacts(deps, body, auth.key?.id ?? null))
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
}
