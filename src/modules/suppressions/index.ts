import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, requires } from '../../http/schemas'
import { BatchAddBody, BatchAddResultSchema, BatchDeleteBody, BatchDeleteResultSchema, ListSuppressionsQuery, SuppressionSchema } from './model'
import { addSuppressions, deleteSuppression, getSuppression, listSuppressions, MAX_BATCH_ENTRIES, removeSuppressions } from './service'

const tags = ['suppressions']

/** /api/v2/suppressions: addresses and domains that no send may reach, globally or for one list or program. */
export function suppressionRoutes(deps: Deps) {
  return new Elysia({ prefix: '/api/v2/suppressions' })
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
    .get('/', ({ query }) => okPage(listSuppressions(deps, query)), {
      query: ListSuppressionsQuery,
      response: { 200: Paged(SuppressionSchema), ...commonErrors },
      detail: requires('suppressions.read', 'List suppressions', { tags, description: 'Newest first. `search` matches the start of the stored value.' }),
    })
    .get('/:id', ({ params }) => ok(getSuppression(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(SuppressionSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('suppressions.read', 'Get a suppression', { tags }),
    })
    .delete('/:id', ({ params }) => ok(deleteSuppression(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(SuppressionSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('suppressions.delete', 'Lift one suppression', { tags, description: 'Answers with the record as it was.' }),
    })
}
