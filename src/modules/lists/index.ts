import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { CreateListBody, ListSchema, UpdateListBody } from './model'
import { createList, deleteLists, getList, listLists, updateList } from './service'

/** /api/v2/lists */
export function listRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'lists',
    view: ListSchema,
    create: { summary: 'Create a list', body: CreateListBody, handle: (body) => createList(deps, body) },
    list: { summary: 'List lists', handle: (query) => listLists(deps, query) },
    get: { summary: 'Get a list with its contact counts', handle: (id) => getList(deps, id) },
    update: { summary: 'Update a list', body: UpdateListBody, handle: (id, body) => updateList(deps, id, body) },
    remove: { summary: 'Delete a list', description: 'Deletes its contacts, list suppressions and imports too.' },
    bulkDelete: {
      summary: 'Delete several lists',
      description: 'With their contacts, list suppressions and imports.',
      handle: (ids) => deleteLists(deps, ids),
    },
  })
}
