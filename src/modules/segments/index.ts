import { t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { ContactSchema } from '../contacts/model'
import { CountSchema, CreateSegmentBody, PreviewSegmentBody, SegmentFieldSchema, SegmentSchema, UpdateSegmentBody } from './model'
import { countSegment, createSegment, deleteSegments, getSegment, listSegments, previewSegment, segmentContacts, segmentFields, updateSegment } from './service'

const tags = ['segments']
const staleRules = 'Answers 409 when the rules use a custom field that has since been deleted.'

/** /api/v2/segments: saved rule trees over contacts, their members and counts. */
export function segmentRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'segments',
    view: SegmentSchema,
    create: {
      summary: 'Create a segment',
      description: 'The rules are checked (fields, operators, values, lists) and stored in canonical form.',
      body: CreateSegmentBody,
      handle: (body) => createSegment(deps, body),
    },
    list: { summary: 'List segments', handle: (query) => listSegments(deps, query) },
    get: {
      summary: 'Get a segment',
      description: 'Without a member count, which can be slow on a large audience: see /count.',
      handle: (id) => getSegment(deps, id),
    },
    update: { summary: 'Update a segment', body: UpdateSegmentBody, handle: (id, body) => updateSegment(deps, id, body) },
    remove: { summary: 'Delete a segment', description: 'Contacts are not touched.' },
    bulkDelete: { summary: 'Delete several segments', description: 'Contacts are not touched.', handle: (ids) => deleteSegments(deps, ids) },
  })
    .get('/fields', () => ok(segmentFields(deps)), {
      response: { 200: Envelope(t.Array(SegmentFieldSchema)), ...commonErrors },
      detail: requires('segments.read', 'The fields rules may use, with their operators and allowed values', {
        tags,
        description:
          'Built-in fields, then every custom field as fields.<key>. Besides field conditions, rules may use {"in_list": id} and {"not_in_list": id}.',
      }),
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
}
