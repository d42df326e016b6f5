import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ok, requires } from '../../http/schemas'
import { BatchAddBody, BatchAddResultSchema, BatchDeleteBody, BatchDeleteResultSchema, MAX_BATCH_ENTRIES, SuppressionFilters, SuppressionSchema } from './model'
import { addSuppressions, deleteSuppression, deleteSuppressionsById, getSuppression, listSuppressions, removeSuppressions } from './service'

const tags = ['suppressions']

/** /api/v2/suppressions: addresses and domains that no send may reach, globally or for one list or program. */
export function suppressionRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'suppressions',
    view: SuppressionSchema,
    list: {
      summary: 'List suppressions',
      description: 'Newest first. `search` matches the start of the stored value.',
      query: SuppressionFilters,
      handle: (query) => listSuppressions(deps, query),
    },
    get: { summary: 'Get a suppression', handle: (id) => getSuppression(deps, id) },
    remove: { summary: 'Lift one suppression', description: 'Answers with the record as it was.', handle: (id) => deleteSuppression(deps, id) },
    bulkDelete: {
      summary: 'Lift several suppressions by id',
      description: 'Whatever their scope and type (the console removes the rows selected in its table); batch-delete lifts entries by value.',
      handle: (ids) => deleteSuppressionsById(deps, ids),
    },
  })
    .post('/batch', ({ body }) => ok(addSuppressions(deps, body)), {
      body: BatchAddBody,
      response: { 200: Envelope(BatchAddResultSchema), ...commonErrors },
      detail: requires('suppressions.create', 'Suppress a batch of addresses or domains', {
        tags,
        description: `Up to ${MAX_BATCH_ENTRIES} entries in one scope, stored in one transaction. Entries already suppressed in that scope, and repeats, count as skipped; invalid entries are listed with the reason and do not fail the request.`,
      }),
    })
    .post('/batch-delete', ({ body }) => ok(removeSuppressions(deps, body)), {
      body: BatchDeleteBody,
      response: { 200: Envelope(BatchDeleteResultSchema), ...commonErrors },
      detail: requires('suppressions.delete', 'Lift a batch of suppressions', {
        tags,
        description: `Up to ${MAX_BATCH_ENTRIES} entries in one scope, removed in one transaction.`,
      }),
    })
}
