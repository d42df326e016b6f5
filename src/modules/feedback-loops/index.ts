import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { CreateFeedbackLoopBody, FeedbackLoopSchema, UpdateFeedbackLoopBody } from './model'
import { createFeedbackLoop, deleteFeedbackLoops, getFeedbackLoop, listFeedbackLoops, updateFeedbackLoop } from './service'

/** /api/v2/feedback-loops */
export function feedbackLoopRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'feedback_loops',
    view: FeedbackLoopSchema,
    create: { summary: 'Create a feedback-loop account', errors: [409], body: CreateFeedbackLoopBody, handle: (body) => createFeedbackLoop(deps, body) },
    list: { summary: 'List feedback-loop accounts', handle: (query) => listFeedbackLoops(deps, query) },
    bulkDelete: { summary: 'Delete several feedback-loop accounts', handle: (ids) => deleteFeedbackLoops(deps, ids) },
    get: { summary: 'Get a feedback-loop account', handle: (id) => getFeedbackLoop(deps, id) },
    update: {
      summary: 'Update a feedback-loop account',
      errors: [409],
      body: UpdateFeedbackLoopBody,
      handle: (id, body) => updateFeedbackLoop(deps, id, body),
    },
    remove: { summary: 'Delete a feedback-loop account' },
  })
}
