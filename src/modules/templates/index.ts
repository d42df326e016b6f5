import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { BulkDeleteBody, BulkDeleteResult, commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
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
  deleteTemplate,
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
  return new Elysia({ prefix: '/api/v2/templates' })
    .post(
      '/',
      ({ body, request, status }) => {
        const template = createTemplate(deps, body)
        authOf(request).target = { type: 'templates', id: template.id }
        return status(201, ok(template))
      },
      {
        body: CreateTemplateBody,
        response: { 201: Envelope(TemplateSchema), ...commonErrors },
        detail: requires('templates.create', 'Create a template', {
          tags,
          description: 'Creates the template and its version 1, which is active. Syntax errors and unknown spin tags answer 422 under the part.',
        }),
      },
    )
    .get('/', ({ query }) => okPage(listTemplates(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(TemplateSummarySchema), ...commonErrors },
      detail: requires('templates.read', 'List templates', { tags, description: 'Oldest first, without html and text (GET one has them).' }),
    })
    .post('/bulk-delete', ({ body }) => ok(deleteTemplates(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('templates.delete', 'Delete several templates', { tags, description: 'With all their versions.' }),
    })
    .get('/:id', ({ params }) => ok(getTemplate(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(TemplateSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('templates.read', 'Get a template with its active content', { tags }),
    })
    .patch('/:id', ({ params, body }) => ok(updateTemplate(deps, params.id, body)), {
      params: IdParams,
      body: UpdateTemplateBody,
      response: { 200: Envelope(TemplateSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('templates.update', 'Update a template', {
        tags,
        description:
          'name and description change the template. A change to subject, html or text creates a new version (the active one with those parts replaced) and makes it active; versions never change.',
      }),
    })
    .delete('/:id', ({ params }) => ok(deleteTemplate(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(TemplateSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('templates.delete', 'Delete a template', { tags, description: 'With all its versions.' }),
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
