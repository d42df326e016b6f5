import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { BulkDeleteBody, BulkDeleteResult, commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { CreateSpinTagBody, SpinTagSchema, UpdateSpinTagBody } from './model'
import { createSpinTag, deleteSpinTag, deleteSpinTags, getSpinTag, listSpinTags, updateSpinTag } from './service'

const tags = ['spin tags']
const inUse = 'Templates that use a deleted tag render it as empty text and report it in `missing_variables` as `spin:<name>`.'

/** /api/v2/spin-tags: named sets of alternatives for {{spin "name"}} in templates. */
export function spinTagRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/spin-tags' })
    .post(
      '/',
      ({ body, request, status }) => {
        const tag = createSpinTag(deps, body)
        authOf(request).target = { type: 'spin_tags', id: tag.id }
        return status(201, ok(tag))
      },
      {
        body: CreateSpinTagBody,
        response: { 201: Envelope(SpinTagSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('spin_tags.create', 'Create a spin tag', { tags, description: 'Answers 409 when the name is taken.' }),
      },
    )
    .get('/', ({ query }) => okPage(listSpinTags(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(SpinTagSchema), ...commonErrors },
      detail: requires('spin_tags.read', 'List spin tags', { tags }),
    })
    .post('/bulk-delete', ({ body }) => ok(deleteSpinTags(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('spin_tags.delete', 'Delete several spin tags', { tags, description: inUse }),
    })
    .get('/:id', ({ params }) => ok(getSpinTag(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(SpinTagSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('spin_tags.read', 'Get a spin tag', { tags }),
    })
    .patch('/:id', ({ params, body }) => ok(updateSpinTag(deps, params.id, body)), {
      params: IdParams,
      body: UpdateSpinTagBody,
      response: { 200: Envelope(SpinTagSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('spin_tags.update', "Replace a spin tag's alternatives", { tags, description: 'The name cannot change: templates refer to it.' }),
    })
    .delete('/:id', ({ params }) => ok(deleteSpinTag(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(SpinTagSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('spin_tags.delete', 'Delete a spin tag', { tags, description: inUse }),
    })
}
