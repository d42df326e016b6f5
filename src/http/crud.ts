import type { TObject, TProperties } from '@sinclair/typebox'
import { Elysia, t, type Static, type TSchema } from 'elysia'
import type { BulkDeleteOutcome } from '../db/crud'
import type { PageMeta } from '../lib/pagination'
import type { AuthContext, AuthOf } from './auth'
import {
  type SemanticCheck,
  BulkDeleteBody,
  BulkDeleteResult,
  commonErrors,
  Envelope,
  ErrorEnvelope,
  IdParams,
  ok,
  okPage,
  Paged,
  PageQuery,
  requires,
} from './schemas'

type Awaitable<T> = T | Promise<T>

/** What a CRUD handler may know about its request besides its input. */
export interface CrudContext {
  request: Request
  /** The authenticated caller (the auth layer has already checked the route's permission). */
  auth(): AuthContext
}

/** The OpenAPI words of one operation, and the error statuses it can answer beyond the common ones. */
interface Operation {
  summary: string
  description?: string
  /** Extra error statuses, such as 409; item routes get 404 without asking. */
  errors?: number[]
  /** Defaults to `<group>.<action>` (create, read, update, delete). */
  permission?: string
  /** The route's own checks of a body, merged into a schema failure's 422 (see `requires`). */
  check?: SemanticCheck
}

/**
 * A resource's standard routes, declared once: list / get / create / update / delete /
 * bulk-delete with the envelope, pagination, permission, activity-log target and OpenAPI
 * details. A module passes its schemas and plain service functions; custom actions
 * (`/rotate-secret`, `/test`) are ordinary routes added to the returned instance.
 */
export interface CrudResource<View extends TSchema, Create extends TSchema, Update extends TSchema, Query extends TProperties, Item extends TSchema = View> {
  /**
   * The resource's name in snake_case (`sending_nodes`): the activity log's target type, and
   * by default the permission group, the path `/api/v2/sending-nodes` and the OpenAPI tag
   * `sending nodes`.
   */
  resource: string
  /** The permission group (`ips` -> `ips.read` ...) when it is not the resource. */
  group?: string
  prefix?: string
  tags?: string[]
  /** The record as the API shows it. */
  view: View
  create?: Operation & {
    body: Create
    /** What a create answers when it differs from the view (a secret shown once). */
    response?: TSchema
    handle(body: Static<Create>, ctx: CrudContext): Awaitable<{ id: number | string }>
  }
  list?: Operation & {
    /** Filters beside page and per_page. */
    query?: Query
    /** What a list shows of each record when it is less than the view (no bodies). */
    item?: Item
    handle(query: Static<TObject<Query>> & { page?: number; per_page?: number }, ctx: CrudContext): Awaitable<{ items: Static<Item>[]; meta: PageMeta }>
  }
  /** Synchronous: the route answers in the same turn (see it below). */
  get?: Operation & { handle(id: number, ctx: CrudContext): Static<View> }
  update?: Operation & { body: Update; handle(id: number, body: Static<Update>, ctx: CrudContext): Awaitable<Static<View>> }
  /** Without `handle`: answers the record as it was (through `get`) and deletes it through `bulkDelete`. */
  remove?: Operation & { handle?(id: number, ctx: CrudContext): Awaitable<Static<View>> }
  bulkDelete?: Operation & {
    /** Defaults to `/bulk-delete`; contacts keep the spec's `/batch-delete`. */
    path?: string
    handle(ids: number[], ctx: CrudContext): Awaitable<BulkDeleteOutcome>
  }
}

function errorsFor(op: Operation, item: boolean): Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...commonErrors }
  for (const status of [...(item ? [404] : []), ...(op.errors ?? [])]) out[status] = ErrorEnvelope
  return out
}

/** The OpenAPI tags of a resource's routes: its name in words (`sending_nodes` -> `sending nodes`). */
export function resourceTags(resource: string): string[] {
  return [resource.replace(/_/g, ' ')]
}

function detailOf(resource: { group: string; tags: string[] }, op: Operation, action: string) {
  return requires(op.permission ?? `${resource.group}.${action}`, op.summary, { tags: resource.tags, description: op.description, check: op.check })
}

/**
 * Builds the standard routes of a resource (see `CrudResource`). Routes are registered in
 * one order for every module: create, list, bulk-delete, get, update, delete.
 */
export function crudRoutes<
  View extends TSchema,
  Create extends TSchema = TSchema,
  Update extends TSchema = TSchema,
  Query extends TProperties = {},
  Item extends TSchema = View,
>(authOf: AuthOf, declared: CrudResource<View, Create, Update, Query, Item>) {
  const resource = {
    ...declared,
    group: declared.group ?? declared.resource,
    prefix: declared.prefix ?? `/api/v2/${declared.resource.replace(/_/g, '-')}`,
    tags: declared.tags ?? resourceTags(declared.resource),
  }
  // Elysia mutates the instance on each route call; the loose type keeps the generic
  // schemas from being re-inferred per call (the routes' types are not used by clients).
  const app = new Elysia({ prefix: resource.prefix })
  const routes = app as unknown as {
    [M in 'get' | 'post' | 'patch' | 'delete']: (path: string, handler: (ctx: any) => unknown, hooks: Record<string, unknown>) => unknown
  }
  const context = (request: Request): CrudContext => ({ request, auth: () => authOf(request) })
  // The activity log names the changed record; set here so a target type other than the group holds on every change.
  const markTarget = (request: Request, id: number | string) => {
    authOf(request).target = { type: resource.resource, id }
  }
  const { create, list, get, update, remove, bulkDelete } = resource

  if (create) {
    routes.post(
      '/',
      async ({ body, request, status }: { body: Static<Create>; request: Request; status: (code: 201, body: unknown) => unknown }) => {
        const record = await create.handle(body, context(request))
        markTarget(request, record.id)
        return status(201, ok(record))
      },
      {
        body: create.body,
        response: { 201: Envelope(create.response ?? resource.view), ...errorsFor(create, false) },
        detail: detailOf(resource, create, 'create'),
      },
    )
  }
  if (list) {
    routes.get('/', async ({ query, request }: { query: never; request: Request }) => okPage(await list.handle(query, context(request))), {
      query: t.Object({ ...PageQuery, ...list.query }),
      response: { 200: Paged(list.item ?? resource.view), ...errorsFor(list, false) },
      detail: detailOf(resource, list, 'read'),
    })
  }
  if (bulkDelete) {
    routes.post(
      bulkDelete.path ?? '/bulk-delete',
      async ({ body, request }: { body: { ids: number[] }; request: Request }) => ok(await bulkDelete.handle(body.ids, context(request))),
      {
        body: BulkDeleteBody,
        response: { 200: Envelope(BulkDeleteResult), ...errorsFor(bulkDelete, false) },
        detail: detailOf(resource, bulkDelete, 'delete'),
      },
    )
  }
  if (get) {
    // Bound, so that Elysia sees no source: it guesses from a handler's text whether it is async
    // (an arrow to a call counts) and then awaits it, a turn of the microtask queue on every
    // read of a record (decision 86). Nor does it read which context fields the handler uses:
    // only `params` and `request`, which every route's context has.
    const getOne = ({ params, request }: { params: { id: number }; request: Request }) => ok(get.handle(params.id, context(request)))
    routes.get('/:id', getOne.bind(null), {
      params: IdParams,
      response: { 200: Envelope(resource.view), ...errorsFor(get, true) },
      detail: detailOf(resource, get, 'read'),
    })
  }
  if (update) {
    routes.patch(
      '/:id',
      async ({ params, body, request }: { params: { id: number }; body: Static<Update>; request: Request }) => {
        markTarget(request, params.id)
        return ok(await update.handle(params.id, body, context(request)))
      },
      {
        params: IdParams,
        body: update.body,
        response: { 200: Envelope(resource.view), ...errorsFor(update, true) },
        detail: detailOf(resource, update, 'update'),
      },
    )
  }
  if (remove) {
    const removeOne =
      remove.handle ??
      (async (id: number, ctx: CrudContext) => {
        if (!get || !bulkDelete) throw new Error(`crudRoutes(${resource.prefix}): remove without handle needs get and bulkDelete`)
        const record = await get.handle(id, ctx)
        await bulkDelete.handle([id], ctx)
        return record
      })
    routes.delete(
      '/:id',
      async ({ params, request }: { params: { id: number }; request: Request }) => {
        markTarget(request, params.id)
        return ok(await removeOne(params.id, context(request)))
      },
      {
        params: IdParams,
        response: { 200: Envelope(resource.view), ...errorsFor(remove, true) },
        detail: detailOf(resource, remove, 'delete'),
      },
    )
  }
  return app
}
