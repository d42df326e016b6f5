import { Elysia, t } from 'elysia'
import { templates } from '../../db/schema'
import type { Deps } from '../../deps'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import type { TemplateView } from '../templates/model'
import { activateVersion, createTemplate, deleteTemplates, getTemplate, getVersion, updateTemplate } from '../templates/service'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery } from './ids'
import { deleted, refuse } from './shapes'

/**
 * resend.templates onto Mailroom's versioned templates. Resend edits a draft and `publish`
 * makes it live; Mailroom saves every change as an immutable version and sends use the
 * active one. So an update here saves a new version and leaves the active one as it was (the
 * native update activates; the previous version is activated again), and `publish`
 * activates the newest version. A template is `published` when its newest version is the
 * active one. Template bodies are Handlebars, which reads Resend's `{{{VAR}}}` as it is.
 */

const Item = t.Object({
  id: t.String(),
  name: t.String(),
  status: t.Union([t.Literal('draft'), t.Literal('published')]),
  published_at: t.Union([t.String(), t.Null()]),
  alias: t.Null(),
  created_at: t.String(),
  updated_at: t.String(),
})
const Full = t.Composite([
  t.Object({ object: t.Literal('template') }),
  Item,
  t.Object({
    subject: t.Union([t.String(), t.Null()]),
    html: t.String(),
    text: t.Union([t.String(), t.Null()]),
    variables: t.Null(),
    from: t.Union([t.String(), t.Null()]),
    reply_to: t.Union([t.Array(t.String()), t.Null()]),
    has_unpublished_versions: t.Boolean(),
    current_version_id: t.String(),
  }),
])
const Ack = t.Object({ object: t.Literal('template'), id: t.String() })
const Variable = t.Object({ key: t.String(), type: t.String(), fallback_value: t.Optional(t.Union([t.String(), t.Number(), t.Null()])) })
const Content = {
  subject: t.Optional(t.String()),
  html: t.Optional(t.String()),
  text: t.Optional(t.String()),
  from: t.Optional(t.String()),
  reply_to: t.Optional(t.Union([t.String(), t.Array(t.String())])),
  alias: t.Optional(t.String()),
  variables: t.Optional(t.Array(Variable)),
}
type ContentBody = {
  subject?: string
  html?: string
  text?: string
  from?: string
  reply_to?: string | string[]
  alias?: string
  variables?: Array<typeof Variable.static>
}

/** Resend's content fields -> the templates service's; what Mailroom cannot keep is refused. */
function contentOf(b: ContentBody) {
  if (b.alias !== undefined) refuse('alias', 'templates are named by id only')
  b.variables?.forEach((v, i) => {
    // A variable without a value renders empty; Mailroom has no per-variable fallback to keep.
    if (v.fallback_value != null) refuse(`variables.${i}.fallback_value`, 'fallback values are not available; use {{#if}} or {{else}} in the template')
  })
  const replyTo = b.reply_to === undefined ? undefined : ([] as string[]).concat(b.reply_to)
  if (replyTo && replyTo.length > 1) refuse('reply_to', 'a template has one Reply-To address')
  return { subject: b.subject, html: b.html, text: b.text, from: b.from, reply_to: replyTo === undefined ? undefined : (replyTo[0] ?? null) }
}

function itemOf(deps: Deps, v: TemplateView) {
  const published = v.active_version === v.versions_count
  return {
    id: encodeId('template', v.id),
    name: v.name,
    status: published ? ('published' as const) : ('draft' as const),
    // The time the active version was saved: Mailroom does not record when it was activated.
    published_at: getVersion(deps, v.id, v.active_version).created_at,
    alias: null,
    created_at: v.created_at,
    updated_at: v.updated_at,
  }
}

function fullOf(deps: Deps, id: number) {
  const v = getTemplate(deps, id)
  // Resend shows the newest saved content, published or not.
  const latest = getVersion(deps, id, v.versions_count)
  return {
    object: 'template' as const,
    ...itemOf(deps, v),
    subject: latest.subject,
    html: latest.html ?? '',
    text: latest.text,
    variables: null,
    from: latest.from,
    reply_to: latest.reply_to === null ? null : [latest.reply_to],
    has_unpublished_versions: v.active_version !== v.versions_count,
    current_version_id: encodeId('template_version', latest.id),
  }
}

function templateId(deps: Deps, text: string): number {
  const n = decodeId('template', text)
  try {
    getTemplate(deps, n)
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', 'Template not found.')
    throw e
  }
  return n
}

/** /compat/resend/templates */
export function templateRoutes(deps: Deps) {
  const tags = ['resend-compatible']
  const ack = (id: number) => ({ object: 'template' as const, id: encodeId('template', id) })
  return new Elysia()
    .post('/templates', ({ body }) => ack(createTemplate(deps, { name: body.name, ...contentOf(body), subject: body.subject ?? '' }).id), {
      body: t.Object({ name: t.String({ minLength: 1, maxLength: 200 }), ...Content }),
      response: { 200: Ack },
      detail: requires('templates.create', 'Create a template (Resend-compatible)', {
        tags,
        description: 'Its first version is active at once: a new template can be sent without publishing.',
      }),
    })
    .get(
      '/templates',
      ({ query }) => {
        const page = cursorPage(deps.db, templates, 'template', query)
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => itemOf(deps, getTemplate(deps, i))) }
      },
      { query: PaginationQuery, response: { 200: ListOf(Item) }, detail: requires('templates.read', 'List templates (Resend-compatible)', { tags }) },
    )
    .get('/templates/:id', ({ params }) => fullOf(deps, templateId(deps, params.id)), {
      response: { 200: Full },
      detail: requires('templates.read', 'Get a template (Resend-compatible)', { tags }),
    })
    .patch(
      '/templates/:id',
      ({ params, body }) => {
        const id = templateId(deps, params.id)
        const before = getTemplate(deps, id)
        const after = updateTemplate(deps, id, { name: body.name, ...contentOf(body) })
        // A new version is a draft until published: keep the one sends use.
        if (after.active_version !== before.active_version) activateVersion(deps, id, before.active_version)
        return ack(id)
      },
      {
        body: t.Object({ name: t.Optional(t.String({ minLength: 1, maxLength: 200 })), ...Content }),
        response: { 200: Ack },
        detail: requires('templates.update', 'Update a template: saves a draft version (Resend-compatible)', { tags }),
      },
    )
    .post(
      '/templates/:id/publish',
      ({ params }) => {
        const id = templateId(deps, params.id)
        activateVersion(deps, id, getTemplate(deps, id).versions_count)
        return ack(id)
      },
      { response: { 200: Ack }, detail: requires('templates.update', 'Publish a template: activate its newest version (Resend-compatible)', { tags }) },
    )
    .post(
      '/templates/:id/duplicate',
      ({ params }) => {
        const id = templateId(deps, params.id)
        const v = getTemplate(deps, id)
        const latest = getVersion(deps, id, v.versions_count)
        return ack(
          createTemplate(deps, {
            name: `${v.name} (copy)`,
            description: v.description,
            subject: latest.subject,
            html: latest.html,
            text: latest.text,
            from: latest.from,
            reply_to: latest.reply_to,
          }).id,
        )
      },
      { response: { 200: Ack }, detail: requires('templates.create', 'Duplicate a template (Resend-compatible)', { tags }) },
    )
    .delete(
      '/templates/:id',
      ({ params }) => {
        deleteTemplates(deps, [templateId(deps, params.id)])
        return deleted('template', params.id)
      },
      {
        response: { 200: t.Composite([Ack, t.Object({ deleted: t.Boolean() })]) },
        detail: requires('templates.delete', 'Remove a template (Resend-compatible)', { tags }),
      },
    )
}
