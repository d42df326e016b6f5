import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import type { AutomationKind } from '../../db/schema/automations'
import {
  AutomationListQuery,
  AutomationSchema,
  AutomationSummarySchema,
  CreateDripBody,
  CreateTriggerBody,
  CreateVersionBody,
  EnrollBody,
  EnrollResultSchema,
  RunQuery,
  RunSchema,
  StatsSchema,
  TrackBatchBody,
  TrackBatchSchema,
  TrackBody,
  TrackedSchema,
  UpdateDripBody,
  UpdateTriggerBody,
  ValidateBody,
  ValidationSchema,
  VersionSchema,
  type AutomationInput,
} from './model'
import {
  automationStats,
  contactRuns,
  createAutomation,
  createVersion,
  deleteAutomations,
  enrollContacts,
  getAutomation,
  listAutomations,
  listRuns,
  listVersions,
  pauseAutomation,
  resumeAutomation,
  trackEvents,
  updateAutomation,
  validateGraph,
} from './service'

const item = { 404: ErrorEnvelope, ...commonErrors }
const withConflict = { 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors }

/** The routes one kind shares: CRUD, validate, pause/resume, versions, stats, runs. */
function automationResource(deps: Deps, authOf: AuthOf, kind: AutomationKind) {
  const resource = kind === 'drip' ? 'drips' : 'triggers'
  const tags = [resource]
  const noun = kind
  const group = resource
  const app = crudRoutes(authOf, {
    resource,
    view: AutomationSchema,
    create: {
      summary: `Create a ${noun}`,
      description:
        kind === 'drip'
          ? 'A drip: runs start when a contact joins one of list_ids (subscribed, or confirmed on a double opt-in list), or by POST /{id}/enroll. Starts as a draft unless status is given. The graph is checked as a whole (422 keyed steps.<id>).'
          : 'A trigger: a run starts for the contact of each custom event named event_name (POST /api/v2/track) whose properties pass event_filter. Starts as a draft unless status is given.',
      body: kind === 'drip' ? CreateDripBody : CreateTriggerBody,
      handle: (body) => createAutomation(deps, kind, body as AutomationInput & { name: string; graph: unknown }),
    },
    list: {
      summary: `List ${resource}`,
      description: 'Newest first, without graphs (GET one has it).',
      query: AutomationListQuery,
      item: AutomationSummarySchema,
      handle: (query) => listAutomations(deps, kind, query),
    },
    get: { summary: `Get a ${noun} with its current graph and run counts`, handle: (id) => getAutomation(deps, kind, id) },
    update: {
      summary: `Update a ${noun}`,
      description:
        'A graph saves a new version: new runs start on it, runs under way stay on theirs unless move_runs (422 naming a step runs are at that the new graph lacks).',
      body: kind === 'drip' ? UpdateDripBody : UpdateTriggerBody,
      handle: (id, body) => updateAutomation(deps, kind, id, body as AutomationInput),
    },
    remove: { summary: `Delete a ${noun}`, description: 'With its versions, runs and wake-ups; messages already sent stay.' },
    bulkDelete: { summary: `Delete several ${resource}`, handle: (ids) => deleteAutomations(deps, kind, ids) },
  })
  return app
    .post(
      '/validate',
      ({ body, request }) => {
        // A check, not a change: nothing for the activity log.
        authOf(request).logged = true
        return ok(validateGraph(deps, body.graph))
      },
      {
        body: ValidateBody,
        response: { 200: Envelope(ValidationSchema), ...commonErrors },
        detail: requires(`${group}.read`, 'Check a step graph without saving it', {
          tags,
          description:
            'The checks of a save: 200 {valid: true} or 422 with details keyed steps.<step id>[.settings.<field>] (cycles without a wait, unknown steps, settings).',
        }),
      },
    )
    .post('/:id/pause', ({ params }) => ok(pauseAutomation(deps, kind, params.id)), {
      params: IdParams,
      response: { 200: Envelope(AutomationSchema), ...withConflict },
      detail: requires(`${group}.update`, `Pause a ${noun}`, {
        tags,
        description: 'Wake-ups are held; events are still recorded and runs still enter (they wait). 409 when paused already.',
      }),
    })
    .post('/:id/resume', ({ params }) => ok(resumeAutomation(deps, kind, params.id)), {
      params: IdParams,
      response: { 200: Envelope(AutomationSchema), ...withConflict },
      detail: requires(`${group}.update`, `Resume (or activate) a ${noun}`, {
        tags,
        description: 'paused or draft -> active; wake-ups that came due meanwhile run at once. 409 when active.',
      }),
    })
    .get('/:id/versions', ({ params }) => ok(listVersions(deps, kind, params.id)), {
      params: IdParams,
      response: { 200: Envelope(t.Array(VersionSchema)), ...item },
      detail: requires(`${group}.read`, `A ${noun}'s versions`, { tags, description: 'Oldest first, with the runs under way on each.' }),
    })
    .post('/:id/versions', ({ params, body, status }) => status(201, ok(createVersion(deps, kind, params.id, body))), {
      params: IdParams,
      body: CreateVersionBody,
      response: { 201: Envelope(VersionSchema), ...item },
      detail: requires(`${group}.update`, 'Save a new version of the graph', {
        tags,
        description: 'New runs start on it; runs under way stay on theirs, or move with move_runs (422 naming a step they are at that the graph lacks).',
      }),
    })
    .get('/:id/stats', ({ params }) => ok(automationStats(deps, kind, params.id)), {
      params: IdParams,
      response: { 200: Envelope(StatsSchema), ...item },
      detail: requires(`${group}.read`, 'Statistics per step', {
        tags,
        description: 'entered, completed, waiting, sent, opened, clicked, exited per step id.',
      }),
    })
    .get('/:id/runs', ({ params, query }) => okPage(listRuns(deps, kind, params.id, query)), {
      params: IdParams,
      query: t.Object({ ...PageQuery, ...RunQuery }),
      response: { 200: Paged(RunSchema), ...item },
      detail: requires(`${group}.read`, `A ${noun}'s runs`, { tags, description: 'Newest first, each with its executed steps.' }),
    })
}

/** /api/v2/drips and /api/v2/triggers (issue 16): one engine, two entry kinds. */
export function automationRoutes(deps: Deps, authOf: AuthOf) {
  const drips = automationResource(deps, authOf, 'drip').post('/:id/enroll', async ({ params, body }) => ok(await enrollContacts(deps, params.id, body)), {
    params: IdParams,
    body: EnrollBody,
    response: { 200: Envelope(EnrollResultSchema), ...withConflict },
    detail: requires('drips.update', 'Start runs of a drip for contacts', {
      tags: ['drips'],
      description: 'contact_ids (at most 1,000) and/or list_id (every subscribed contact, in chunks). The re-entry policy applies; a draft answers 409.',
    }),
  })
  return new Elysia()
    .use(drips)
    .use(automationResource(deps, authOf, 'trigger'))
    .get('/api/v2/contacts/:id/automations', ({ params, query }) => okPage(contactRuns(deps, params.id, query)), {
      params: IdParams,
      query: t.Object(PageQuery),
      response: { 200: Paged(RunSchema), ...item },
      detail: requires('contacts.read', "A contact's automation runs", {
        tags: ['contacts'],
        description: 'Every drip and trigger run of this contact, newest first, with its steps.',
      }),
    })
}

const trackTags = ['custom events']
const idempotencyOf = (request: Request) => {
  const key = request.headers.get('idempotency-key')
  return key && key.length <= 256 ? key : null
}

/** POST /api/v2/track and /api/v2/track/batch: custom events (permission triggers.track). */
export function trackRoutes(deps: Deps, authOf: AuthOf) {
  const keyOf = (request: Request) => {
    const auth = authOf(request)
    // Data coming in, not a change of settings: the activity log would grow by one row per event.
    auth.logged = true
    return auth.key?.id ?? null
  }
  return new Elysia()
    .post(
      '/api/v2/track',
      async ({ body, request, status }) => {
        const [tracked] = await trackEvents(deps, keyOf(request), [body], idempotencyOf(request))
        return status(202, ok(tracked!))
      },
      {
        body: TrackBody,
        response: { 202: Envelope(TrackedSchema), ...commonErrors },
        detail: requires('triggers.track', 'Record a custom event', {
          tags: trackTags,
          description:
            "Stored and on the contact's timeline (event.tracked) before the 202; it starts triggers, satisfies waits for it and ends runs by exit conditions. Idempotency-Key: a retry stores nothing (duplicate: true).",
        }),
      },
    )
    .post(
      '/api/v2/track/batch',
      async ({ body, request, status }) => {
        const events = await trackEvents(deps, keyOf(request), body.events, idempotencyOf(request))
        return status(202, ok({ accepted: events.length, events }))
      },
      {
        body: TrackBatchBody,
        response: { 202: Envelope(TrackBatchSchema), ...commonErrors },
        detail: requires('triggers.track', 'Record up to 1,000 custom events', {
          tags: trackTags,
          description: 'All or nothing (422 keyed events.<i>.<field>). With an Idempotency-Key, event i uses "<key>#<i>".',
        }),
      },
    )
}
