import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { BulkDeleteBody, BulkDeleteResult, commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { ContactSchema } from '../contacts/model'
import { CountSchema, CreateSegmentBody, PreviewSegmentBody, SegmentSchema, UpdateSegmentBody } from './model'
import { countSegment, createSegment, deleteSegment, deleteSegments, getSegment, listSegments, previewSegment, segmentContacts, updateSegment } from './service'

const tags = ['segments']
const staleRules = 'Answers 409 when the rules use a custom field that has since been deleted.'

/** /api/v2/segments: saved rule trees over contacts, their members and counts. */
export function segmentRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/segments' })
    .post(
      '/',
      ({ body, request, status }) => {
        const segment = createSegment(deps, body)
        authOf(request).target = { type: 'segments', id: segment.id }
        return status(201, ok(segment))
      },
      {
        body: CreateSegmentBody,
        response: { 201: Envelope(SegmentSchema), ...commonErrors },
        detail: requires('segments.create', 'Create a segment', {
          tags,
          description: 'The rules are checked (fields, operators, values, lists) and stored in canonical form.',
        }),
      },
    )
    .get('/', ({ query }) => okPage(listSegments(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(SegmentSchema), ...commonErrors },
      detail: requires('segments.read', 'List segments', { tags }),
    })
    .post(
      '/preview',
      async ({ body, request }) => {
        // A read sent as POST (rules do not fit in a URL): not an action for the activity log.
        authOf(request).logged = true
        return ok(await previewSegment(deps, body.rules))
      },
      {
        body: PreviewSegmentBody,
        response: { 200: Envelope(CountSchema), ...commonErrors },
        detail: requires('segments.read', 'Count the contacts some rules match, without saving them', { tags }),
      },
    )
    .post('/bulk-delete', ({ body }) => ok(deleteSegments(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('segments.delete', 'Delete several segments', { tags, description: 'Contacts are not touched.' }),
    })
    .get('/:id', ({ params }) => ok(getSegment(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(SegmentSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('segments.read', 'Get a segment', { tags, description: 'Without a member count, which can be slow on a large audience: see /count.' }),
    })
    .get('/:id/count', async ({ params }) => ok(await countSegment(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(CountSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('segments.read', 'Count the contacts a segment matches now', { tags, description: staleRules }),
    })
    .get('/:id/contacts', ({ params, query }) => okPage(segmentContacts(deps, params.id, query)), {
      params: IdParams,
      query: t.Object(PageQuery),
      response: { 200: Paged(ContactSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('segments.read', "A page of a segment's contacts", { tags, description: `Contacts matching the rules now, by id. ${staleRules}` }),
    })
    .patch('/:id', ({ params, body }) => ok(updateSegment(deps, params.id, body)), {
      params: IdParams,
      body: UpdateSegmentBody,
      response: { 200: Envelope(SegmentSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('segments.update', 'Update a segment', { tags }),
    })
    .delete('/:id', ({ params }) => ok(deleteSegment(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(SegmentSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('segments.delete', 'Delete a segment', { tags, description: 'Contacts are not touched.' }),
    })
}
