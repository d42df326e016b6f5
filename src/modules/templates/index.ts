import { t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import {
  CreateTemplateBody,
  RenderBody,
  RenderedSchema,
  TemplateSchema,
  TemplateSummarySchema,
  UpdateTemplateBody,
  VersionParams,
  VersionSchema,
  VersionSummarySchema,
} from './model'
import {
  activateVersion,
  createTemplate,
  deleteTemplates,
  getTemplate,
  getVersion,
  listTemplates,
  listVersions,
  renderTemplate,
  updateTemplate,
} from './service'

const tags = ['templates']

/** /api/v2/templates: Handlebars templates with immutable versions, and rendering. */
export function templateRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'templates',
    view: TemplateSchema,
    create: {
      summary: 'Create a template',
      description: 'Creates the template and its version 1, which is active. Syntax errors and unknown spin tags answer 422 under the part.',
      body: CreateTemplateBody,
      handle: (body) => createTemplate(deps, body),
    },
    list: {
      summary: 'List templates',
      description: 'Oldest first, without html and text (GET one has them).',
      item: TemplateSummarySchema,
      handle: (query) => listTemplates(deps, query),
    },
    get: { summary: 'Get a template with its active content', handle: (id) => getTemplate(deps, id) },
    update: {
      summary: 'Update a template',
      description:
        'name and description change the template. A change to subject, html or text creates a new version (the active one with those parts replaced) and makes it active; versions never change.',
      body: UpdateTemplateBody,
      handle: (id, body) => updateTemplate(deps, id, body),
    },
    remove: { summary: 'Delete a template', description: 'With all its versions.' },
    bulkDelete: { summary: 'Delete several templates', description: 'With all their versions.', handle: (ids) => deleteTemplates(deps, ids) },
  })
    .get('/:id/versions', ({ params, query }) => okPage(listVersions(deps, params.id, query)), {
      params: IdParams,
      query: t.Object(PageQuery),
      response: { 200: Paged(VersionSummarySchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('templates.read', "A page of a template's versions", { tags, description: 'Newest first, without html and text.' }),
    })
    .get('/:id/versions/:version', ({ params }) => ok(getVersion(deps, params.id, params.version)), {
      params: VersionParams,
      response: { 200: Envelope(VersionSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('templates.read', 'Get one version by number', { tags }),
    })
    .post('/:id/versions/:version/activate', ({ params }) => ok(activateVersion(deps, params.id, params.version)), {
      params: VersionParams,
      response: { 200: Envelope(TemplateSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('templates.update', 'Make a version the active one', {
        tags,
        description: 'Sends use the active version; activating an older one rolls back.',
      }),
    })
    .post(
      '/:id/render',
      ({ params, body, request }) => {
        // A read sent as POST (variables do not fit in a URL): not an action for the activity log.
        authOf(request).logged = true
        return ok(renderTemplate(deps, params.id, body))
      },
      {
        params: IdParams,
        body: RenderBody,
        response: { 200: Envelope(RenderedSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('templates.read', 'Render a template for some variables and a recipient', {
          tags,
          description: 'Returns what the recipient `to` would receive with these variables, and the names of the variables that are missing. Nothing is sent.',
        }),
      },
    )
}
