import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { CreateCustomFieldBody, CustomFieldSchema, UpdateCustomFieldBody } from './model'
import { createCustomField, deleteCustomFields, getCustomField, listCustomFields, updateCustomField } from './service'

/** /api/v2/custom-fields: the profile fields contacts carry, with types checked on every write. */
export function customFieldRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'custom_fields',
    view: CustomFieldSchema,
    create: { summary: 'Create a custom field', errors: [409], body: CreateCustomFieldBody, handle: (body) => createCustomField(deps, body) },
    list: { summary: 'List custom fields', handle: (query) => listCustomFields(deps, query) },
    get: { summary: 'Get a custom field', handle: (id) => getCustomField(deps, id) },
    update: {
      summary: 'Update a custom field',
      description:
        'The key and type cannot change. Removing a one_of option still in use, or making a field required while contacts lack a value, is refused with 409.',
      errors: [409],
      body: UpdateCustomFieldBody,
      handle: (id, body) => updateCustomField(deps, id, body),
    },
    remove: { summary: 'Delete a custom field', description: 'Also removes the values contacts hold for it.' },
    bulkDelete: {
      summary: 'Delete several custom fields',
      description: 'Also removes the values contacts hold for them.',
      handle: (ids) => deleteCustomFields(deps, ids),
    },
  })
}
