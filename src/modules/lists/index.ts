import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import {
  BulkDeleteBody,
  BulkDeleteResult,
  commonErrors,
  Envelope,
  ErrorEnvelope,
  IdParams,
  ok,
  okPage,
  Paged,
  PageQuery,
  requires,
  NOT_BLANK,
} from '../../http/schemas'
import { CONTACT_STATUSES } from '../../db/schema'
import { createList, deleteLists, getList, listLists, updateList } from './service'

const tags = ['lists']

const ListSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  description: t.String(),
  counts: t.Object(
    { ...Object.fromEntries(CONTACT_STATUSES.map((s) => [s, t.Integer()])), total: t.Integer() },
    { description: 'Contacts on the list by status.' },
  ),
  created_at: t.String(),
  updated_at: t.String(),
})
const CreateListBody = t.Object({
  name: t.String({ minLength: 1, maxLength: 200, pattern: NOT_BLANK }),
  description: t.Optional(t.String({ maxLength: 2000 })),
})

/** /api/v2/lists */
export function listRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/lists' })
    .post(
      '/',
      ({ body, request, status }) => {
        const list = createList(deps, body)
        authOf(request).target = { type: 'lists', id: list.id }
        return status(201, ok(list))
      },
      { body: CreateListBody, response: { 201: Envelope(ListSchema), ...commonErrors }, detail: requires('lists.create', 'Create a list', { tags }) },
    )
    .get('/', ({ query }) => okPage(listLists(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(ListSchema), ...commonErrors },
      detail: requires('lists.read', 'List lists', { tags }),
    })
    .get('/:id', ({ params }) => ok(getList(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(ListSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('lists.read', 'Get a list with its contact counts', { tags }),
    })
    .patch('/:id', ({ params, body }) => ok(updateList(deps, params.id, body)), {
      params: IdParams,
      body: t.Partial(CreateListBody),
      response: { 200: Envelope(ListSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('lists.update', 'Update a list', { tags }),
    })
    .delete(
      '/:id',
      ({ params }) => {
        const list = getList(deps, params.id)
        deleteLists(deps, [params.id])
        return ok(list)
      },
      {
        params: IdParams,
        response: { 200: Envelope(ListSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('lists.delete', 'Delete a list', { tags, description: 'Deletes its contacts, list suppressions and imports too.' }),
      },
    )
    .post('/bulk-delete', ({ body }) => ok(deleteLists(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('lists.delete', 'Delete several lists', { tags, description: 'With their contacts, list suppressions and imports.' }),
    })
}
