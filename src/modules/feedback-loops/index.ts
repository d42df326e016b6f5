import { Elysia, t, type TSchema } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { FEEDBACK_LOOP_KINDS } from '../../db/schema'
import {
  BulkDeleteBody,
  BulkDeleteResult,
  commonErrors,
  Envelope,
  enumOf,
  ErrorEnvelope,
  IdParams,
  ok,
  okPage,
  Paged,
  PageQuery,
  requires,
  NOT_BLANK,
} from '../../http/schemas'
import { createFeedbackLoop, deleteFeedbackLoops, getFeedbackLoop, listFeedbackLoops, MIN_POLL_SECONDS, updateFeedbackLoop } from './service'

const tags = ['feedback loops']
const nullable = <T extends TSchema>(s: T) => t.Union([s, t.Null()])

const AccountSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  kind: enumOf(FEEDBACK_LOOP_KINDS),
  address: nullable(t.String({ description: 'kind address: the address on the inbound listener that receives the reports.' })),
  host: nullable(t.String({ description: 'kind imap: IMAP server.' })),
  port: nullable(t.Integer()),
  tls: nullable(t.Boolean({ description: 'Implicit TLS (port 993); false connects in plain text and upgrades with STARTTLS when offered.' })),
  username: nullable(t.String()),
  password_set: t.Boolean({ description: 'The password is write-only; this says whether one is stored.' }),
  mailbox: nullable(t.String()),
  poll_interval_seconds: nullable(t.Integer()),
  active: t.Boolean(),
  last_polled_at: nullable(t.String({ format: 'date-time' })),
  last_error: nullable(t.String({ description: 'Why the last poll failed; null after a clean poll.' })),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

const Fields = {
  name: t.String({ minLength: 1, maxLength: 200, pattern: NOT_BLANK }),
  address: t.Optional(nullable(t.String({ maxLength: 320, description: "kind address: at this server's host name or a return-path host." }))),
  host: t.Optional(nullable(t.String({ maxLength: 253 }))),
  port: t.Optional(nullable(t.Integer({ minimum: 1, maximum: 65535, description: 'Default 993 with tls, 143 without.' }))),
  tls: t.Optional(nullable(t.Boolean({ description: 'Default true.' }))),
  username: t.Optional(nullable(t.String({ minLength: 1, maxLength: 320 }))),
  password: t.Optional(nullable(t.String({ minLength: 1, maxLength: 1000, description: 'Write-only.' }))),
  mailbox: t.Optional(nullable(t.String({ minLength: 1, maxLength: 500, description: 'Default INBOX.' }))),
  poll_interval_seconds: t.Optional(nullable(t.Integer({ minimum: MIN_POLL_SECONDS, maximum: 86_400, description: 'Default 300.' }))),
  active: t.Optional(t.Boolean()),
}

const CreateBody = t.Object({ ...Fields, kind: enumOf(FEEDBACK_LOOP_KINDS) })
const UpdateBody = t.Partial(t.Object({ ...Fields, kind: enumOf(FEEDBACK_LOOP_KINDS, { description: 'Cannot change; accepted when equal.' }) }))

/** /api/v2/feedback-loops */
export function feedbackLoopRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/feedback-loops' })
    .post(
      '/',
      ({ body, request, status }) => {
        const account = createFeedbackLoop(deps, body)
        authOf(request).target = { type: 'feedback_loops', id: account.id }
        return status(201, ok(account))
      },
      {
        body: CreateBody,
        response: { 201: Envelope(AccountSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('feedback_loops.create', 'Create a feedback-loop account', { tags }),
      },
    )
    .get('/', ({ query }) => okPage(listFeedbackLoops(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(AccountSchema), ...commonErrors },
      detail: requires('feedback_loops.read', 'List feedback-loop accounts', { tags }),
    })
    .get('/:id', ({ params }) => ok(getFeedbackLoop(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(AccountSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('feedback_loops.read', 'Get a feedback-loop account', { tags }),
    })
    .patch('/:id', ({ params, body }) => ok(updateFeedbackLoop(deps, params.id, body)), {
      params: IdParams,
      body: UpdateBody,
      response: { 200: Envelope(AccountSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('feedback_loops.update', 'Update a feedback-loop account', { tags }),
    })
    .delete(
      '/:id',
      ({ params }) => {
        const account = getFeedbackLoop(deps, params.id)
        deleteFeedbackLoops(deps, [params.id])
        return ok(account)
      },
      {
        params: IdParams,
        response: { 200: Envelope(AccountSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('feedback_loops.delete', 'Delete a feedback-loop account', { tags }),
      },
    )
    .post('/bulk-delete', ({ body }) => ok(deleteFeedbackLoops(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('feedback_loops.delete', 'Delete several feedback-loop accounts', { tags }),
    })
}
