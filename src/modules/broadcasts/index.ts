import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, publicRoute, requires } from '../../http/schemas'
import { archiveFeed, archivePage, findArchived } from './archive'
import { sendBroadcastTest } from './render'
import {
  ArchiveParams,
  AudienceCountBody,
  TestSendBody,
  TestSendResultSchema,
  AudienceCountSchema,
  BroadcastListQuery,
  BroadcastSchema,
  BroadcastSummarySchema,
  CreateBroadcastBody,
  CreateVersionBody,
  RecipientQuery,
  RecipientSchema,
  ScheduleBody,
  StatsSchema,
  UpdateBroadcastBody,
  UpdateVersionBody,
  VersionParams,
  VersionSchema,
} from './model'
import {
  audienceCount,
  broadcastStats,
  cancelBroadcast,
  checkBroadcastFields,
  createBroadcast,
  createVersion,
  deleteBroadcasts,
  deleteVersion,
  duplicateBroadcast,
  getBroadcast,
  listBroadcasts,
  listRecipients,
  listVersions,
  pauseBroadcast,
  resendToNonOpeners,
  resumeBroadcast,
  scheduleBroadcast,
  updateBroadcast,
  updateVersion,
} from './service'

const tags = ['broadcasts']
const item = { 404: ErrorEnvelope, ...commonErrors }
const withConflict = { 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors }
const editable = 'Only while the broadcast is draft, scheduled or paused; otherwise 409 naming its status.'

/**
 * /api/v2/broadcasts: mailings to an audience snapshot (issue 15). These routes change the
 * `status` column; the runner (bc-engine's files in this folder) acts on it when the doorbell
 * rings; POST /{id}/test queues test copies through the engine's renderer (render.ts).
 */
export function broadcastRoutes(deps: Deps, authOf: AuthOf) {
  const actorOf = (request: Request) => authOf(request).actor.name
  /** A draft made from another broadcast (duplicate, resend to non-openers): the activity log names the new one. */
  const newDraft = <T extends { id: number }>(request: Request, copy: T) => {
    authOf(request).target = { type: 'broadcasts', id: copy.id }
    return ok(copy)
  }
  return crudRoutes(authOf, {
    resource: 'broadcasts',
    view: BroadcastSchema,
    create: {
      summary: 'Create a broadcast (a draft)',
      description:
        'from must be on a verified sending domain; lists, segments, the template and the pool must exist; content is html and/or text, or template_id.',
      body: CreateBroadcastBody,
      check: (body) => checkBroadcastFields(deps, body),
      handle: (body) => createBroadcast(deps, body),
    },
    list: {
      summary: 'List broadcasts',
      description: 'Newest first, without html and text (GET one has them).',
      query: BroadcastListQuery,
      item: BroadcastSummarySchema,
      handle: (query) => listBroadcasts(deps, query),
    },
    get: { summary: 'Get a broadcast with its status, counts and progress', handle: (id) => getBroadcast(deps, id) },
    update: {
      summary: 'Update a broadcast',
      description: editable,
      errors: [409],
      body: UpdateBroadcastBody,
      check: (body) => checkBroadcastFields(deps, body),
      handle: (id, body) => updateBroadcast(deps, id, body),
    },
    remove: {
      summary: 'Delete a broadcast',
      description: 'With its versions, recipient rows and counters. A preparing or sending broadcast answers 409.',
      errors: [409],
    },
    bulkDelete: {
      summary: 'Delete several broadcasts',
      description: 'Refused whole (409) when any of them is preparing or sending.',
      errors: [409],
      handle: (ids) => deleteBroadcasts(deps, ids),
    },
  })
    .post(
      '/audience-count',
      ({ body, request }) => {
        // A read sent as POST (the audience does not fit in a URL): not an action for the activity log.
        authOf(request).logged = true
        return ok(audienceCount(deps, body))
      },
      {
        body: AudienceCountBody,
        response: { 200: Envelope(AudienceCountSchema), ...commonErrors },
        detail: requires('broadcasts.read', 'Count the distinct subscribed addresses an audience reaches', {
          tags,
          description: 'Over the same query the broadcast engine copies the audience with, so the editor shows what a send would reach now.',
        }),
      },
    )
    .post('/:id/schedule', ({ params, body }) => ok(scheduleBroadcast(deps, params.id, body?.send_at)), {
      params: IdParams,
      body: t.Optional(ScheduleBody),
      response: { 200: Envelope(BroadcastSchema), ...withConflict },
      detail: requires('broadcasts.send', 'Schedule a broadcast', {
        tags,
        description: 'draft (or paused before it started) -> scheduled. Needs an audience and content (422 otherwise). send_at omitted or past = now.',
      }),
    })
    .post('/:id/pause', ({ params, request }) => ok(pauseBroadcast(deps, params.id, actorOf(request))), {
      params: IdParams,
      response: { 200: Envelope(BroadcastSchema), ...withConflict },
      detail: requires('broadcasts.send', 'Pause a broadcast', { tags, description: 'scheduled, preparing or sending -> paused; emits broadcast.paused.' }),
    })
    .post('/:id/resume', ({ params }) => ok(resumeBroadcast(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(BroadcastSchema), ...withConflict },
      detail: requires('broadcasts.send', 'Resume a paused broadcast', {
        tags,
        description: 'paused -> sending when it has recipient rows (continues where the rows say), else scheduled for now.',
      }),
    })
    .post('/:id/cancel', ({ params, request }) => ok(cancelBroadcast(deps, params.id, actorOf(request))), {
      params: IdParams,
      response: { 200: Envelope(BroadcastSchema), ...withConflict },
      detail: requires('broadcasts.send', 'Cancel a broadcast', {
        tags,
        description: 'Any live state -> cancelled. Pending recipients stay pending and are not sent.',
      }),
    })
    .post('/:id/duplicate', ({ params, request, status }) => status(201, newDraft(request, duplicateBroadcast(deps, params.id))), {
      params: IdParams,
      response: { 201: Envelope(BroadcastSchema), ...item },
      detail: requires('broadcasts.create', 'Duplicate a broadcast', {
        tags,
        description: 'A new draft "<name> (copy)" with the same settings, content and versions.',
      }),
    })
    .post('/:id/test', async ({ params, body, status }) => status(202, ok({ message_ids: await sendBroadcastTest(deps, params.id, body.to) })), {
      params: IdParams,
      body: TestSendBody,
      response: { 202: Envelope(TestSendResultSchema), ...item },
      detail: requires('broadcasts.send', 'Send test copies of a broadcast', {
        tags,
        description:
          "Every version (or the broadcast's own content) rendered for a sample contact of the audience and queued to each address: marked as a test (subject prefix, tag test), no tracking, counted nowhere.",
      }),
    })
    .post('/:id/resend-to-non-openers', ({ params, request, status }) => status(201, newDraft(request, resendToNonOpeners(deps, params.id))), {
      params: IdParams,
      response: { 201: Envelope(BroadcastSchema), ...withConflict },
      detail: requires('broadcasts.send', 'Resend a sent broadcast to its recipients without an open', {
        tags,
        description:
          'Only for a sent broadcast: a new draft "<name> (non-openers)" whose audience is the original\'s recipients without an open (source_broadcast_id).',
      }),
    })
    .get('/:id/recipients', ({ params, query }) => okPage(listRecipients(deps, params.id, query)), {
      params: IdParams,
      query: t.Object({ ...PageQuery, ...RecipientQuery }),
      response: { 200: Paged(RecipientSchema), ...item },
      detail: requires('broadcasts.read', "A page of a broadcast's recipients", {
        tags,
        description: 'In id order; filter by state and version_id. Empty until the broadcast starts.',
      }),
    })
    .get('/:id/stats', ({ params }) => ok(broadcastStats(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(StatsSchema), ...item },
      detail: requires('broadcasts.read', 'Statistics of a broadcast, per version and per link', { tags }),
    })
    .get('/:id/versions', ({ params }) => ok(listVersions(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(t.Array(VersionSchema)), ...item },
      detail: requires('broadcasts.read', "A broadcast's versions", { tags, description: 'Oldest first (at most 10).' }),
    })
    .post('/:id/versions', ({ params, body, status }) => status(201, ok(createVersion(deps, params.id, body))), {
      params: IdParams,
      body: CreateVersionBody,
      response: { 201: Envelope(VersionSchema), ...withConflict },
      detail: requires('broadcasts.update', 'Add a version', { tags, description: `A variant of subject, content, sender name or send time. ${editable}` }),
    })
    .patch('/:id/versions/:vid', ({ params, body }) => ok(updateVersion(deps, params.id, params.vid, body)), {
      params: VersionParams,
      body: UpdateVersionBody,
      response: { 200: Envelope(VersionSchema), ...withConflict },
      detail: requires('broadcasts.update', 'Update a version', { tags, description: editable }),
    })
    .delete('/:id/versions/:vid', ({ params }) => ok(deleteVersion(deps, params.id, params.vid)), {
      params: VersionParams,
      response: { 200: Envelope(VersionSchema), ...withConflict },
      detail: requires('broadcasts.update', 'Delete a version', { tags, description: editable }),
    })
}

const archiveTags = ['archive']

/**
 * The public archive (no key: readers follow these links from mail and feed readers):
 * GET /archive/feed.xml (RSS 2.0) and GET /archive/{archive_id} (the page of a sent broadcast
 * that opted in; anything else 404).
 */
export function broadcastArchiveRoutes(deps: Deps) {
  const notFound = () =>
    new Response('<!doctype html><title>Not found</title><h1>Not found</h1>', { status: 404, headers: { 'content-type': 'text/html; charset=utf-8' } })
  return new Elysia()
    .get(
      '/archive/feed.xml',
      () => new Response(archiveFeed(deps), { headers: { 'content-type': 'application/rss+xml; charset=utf-8', 'cache-control': 'public, max-age=300' } }),
      {
        detail: publicRoute('RSS feed of archived broadcasts', archiveTags),
      },
    )
    .get(
      '/archive/:archive_id',
      ({ params }) => {
        const b = findArchived(deps, params.archive_id)
        if (!b) return notFound()
        return new Response(archivePage(deps, b), { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'public, max-age=300' } })
      },
      { params: ArchiveParams, detail: publicRoute('Public archive page of a sent broadcast', archiveTags) },
    )
}
