import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { CreateSpinTagBody, SpinTagSchema, UpdateSpinTagBody } from './model'
import { createSpinTag, deleteSpinTags, getSpinTag, listSpinTags, updateSpinTag } from './service'

const inUse = 'Templates that use a deleted tag render it as empty text and report it in `missing_variables` as `spin:<name>`.'

/** /api/v2/spin-tags: named sets of alternatives for {{spin "name"}} in templates. */
export function spinTagRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'spin_tags',
    view: SpinTagSchema,
    create: {
      summary: 'Create a spin tag',
      description: 'Answers 409 when the name is taken.',
      errors: [409],
      body: CreateSpinTagBody,
      handle: (body) => createSpinTag(deps, body),
    },
    list: { summary: 'List spin tags', handle: (query) => listSpinTags(deps, query) },
    get: { summary: 'Get a spin tag', handle: (id) => getSpinTag(deps, id) },
    update: {
      summary: "Replace a spin tag's alternatives",
      description: 'The name cannot change: templates refer to it.',
      body: UpdateSpinTagBody,
      handle: (id, body) => updateSpinTag(deps, id, body),
    },
    remove: { summary: 'Delete a spin tag', description: inUse },
    bulkDelete: { summary: 'Delete several spin tags', description: inUse, handle: (ids) => deleteSpinTags(deps, ids) },
  })
}
