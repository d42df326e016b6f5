import { Elysia } from 'elysia'
import type { Deps } from './deps'
import { createAuth } from './http/auth'
import { bodyPlugin } from './http/body'
import { envelopePlugin } from './http/envelope'
import { openapiPlugin } from './http/openapi'
import { answerPlugin, requestLogPlugin } from './http/request-log'
import { skipResponseValidation, strictResponsesPlugin } from './http/response-validation'
import { sessionRoutes } from './http/session'
import { SEMANTIC_CHECK, type SemanticCheck } from './http/schemas'
import { consoleDevRoutes, webPlugin } from './http/web'
import { createRateLimiter } from './lib/rate-limit'
import { createRouteTable, type RouteInfo, type RouteTable } from './lib/route-table'
import { activityLogRoutes } from './modules/activity-logs'
import { adminRoutes } from './modules/admins'
import { resolveSession } from './modules/admins/sessions'
import { apiKeyRoutes } from './modules/api-keys'
import { bridgeRoutes } from './modules/bridges'
import { broadcastArchiveRoutes, broadcastRoutes } from './modules/broadcasts'
import { automationRoutes, trackRoutes } from './modules/automations'
import { contactRoutes } from './modules/contacts'
import { customFieldRoutes } from './modules/custom-fields'
import { dmarcRoutes } from './modules/dmarc'
import { doctorRoutes } from './modules/doctor'
import { pauseForListedIp } from './delivery/guardrails'
import { feedbackLoopRoutes } from './modules/feedback-loops'
import { importRoutes } from './modules/imports'
import { ipPoolRoutes } from './modules/ip-pools'
import { ipRoutes } from './modules/ips'
import { deliverabilityRoutes } from './modules/deliverability'
import { createImportRunner } from './modules/imports/runner'
import { suppressionReasons } from './modules/imports/suppressed'
import { listRoutes } from './modules/lists'
import { messageRoutes } from './modules/messages'
import { messageReadRoutes } from './modules/messages/reads'
import { resendErrorDialect, resendRoutes } from './modules/messages/resend'
import { createKeyResolver, createUsageRecorder } from './modules/api-keys/service'
import { permissionRoutes } from './modules/permissions'
import { roleRoutes } from './modules/roles'
import { segmentRoutes } from './modules/segments'
import { sendingDomainRoutes } from './modules/sending-domains'
import { sendingNodeRoutes } from './modules/sending-nodes'
import { suppressionRoutes } from './modules/suppressions'
import { systemRoutes } from './modules/system'
import { spinTagRoutes } from './modules/spin-tags'
import { eventRoutes } from './modules/events'
import { statsRoutes } from './modules/stats'
import { templateRoutes } from './modules/templates'
import { trackingRoutes } from './modules/tracking'
import { webhookRoutes } from './modules/webhooks'
import { webFormPublicRoutes, webFormRoutes } from './modules/web-forms'

/** The route table the auth layer consults, read from each route's `detail`. */
function routeTableOf(app: { routes: Array<{ method: string; path: string; hooks?: { detail?: Record<string, unknown> } }> }): RouteTable {
  const infos: RouteInfo[] = app.routes.map((r) => ({
    method: r.method,
    path: r.path,
    permission: (r.hooks?.detail?.['x-permission'] as string | undefined) ?? null,
    contentTypes: (r.hooks?.detail?.['x-content-types'] as string[] | undefined) ?? [],
    maxBytes: r.hooks?.detail?.['x-max-bytes'] as number | undefined,
  }))
  return createRouteTable(infos)
}

/**
 * Composes the HTTP application; never listens, so tests call `app.handle(request)`.
 * Order matters: the error envelope and the auth layer are registered before any route,
 * because Elysia's hooks only cover routes registered after them.
 */
export function buildApp(deps: Deps, opts: { strictResponses?: boolean } = {}) {
  const usage = createUsageRecorder(deps)
  const imports = createImportRunner(deps, { suppressionReasons: (emails, listId) => suppressionReasons(deps, emails, listId) })
  let table: RouteTable | null = null
  // Routes' semantic body checks, which the error envelope merges into a schema failure (issue 13).
  const checks = new Map<string, SemanticCheck>()
  // Filled once the app is composed: hooks that need the whole route list read it from here.
  let composed: Array<{ method: string; path: string; hooks?: { body?: unknown; response?: unknown; detail?: Record<string, unknown> } }> = []
  const auth = createAuth(deps, {
    routes: () => table!,
    resolveKey: createKeyResolver(deps),
    resolveSession: (token) => resolveSession(deps, token),
    limiter: createRateLimiter(),
    usage,
  })

  const requestLog = requestLogPlugin(deps.log, deps.config.access_log)
  // Every answer, a handler's or the error envelope's, goes to the activity log (authenticated changes) and the access log.
  const answered = (request: Request, status: number) => {
    auth.recordAnswer(request, status)
    requestLog.record(request, status)
  }

  // From source, Bun itself bundles and serves the console (hot reload); the binary serves it through webPlugin.
  const app = new Elysia({ serve: { routes: consoleDevRoutes() } })
    .use(envelopePlugin(deps.log, answered, [resendErrorDialect], (method, route) => checks.get(`${method} ${route}`)))
    .use(requestLog.plugin)
    .use(opts.strictResponses ? strictResponsesPlugin(() => composed) : new Elysia({ name: 'strict-responses-off' }))
    .use(answerPlugin(answered))
    .use(auth.plugin)
    .use(bodyPlugin(deps.config.max_body_bytes, () => table!))
    .use(openapiPlugin(() => composed))
    .use(webPlugin())
    .use(systemRoutes(deps))
    .use(permissionRoutes())
    .use(roleRoutes(deps, auth.authOf))
    .use(apiKeyRoutes(deps, auth.authOf, usage))
    .use(activityLogRoutes(deps))
    // the console's sign-in and its administrators (issue 14)
    .use(sessionRoutes(deps))
    .use(adminRoutes(deps, auth.authOf))
    // audience (issue 3): one line per module below
    .use(listRoutes(deps, auth.authOf))
    .use(customFieldRoutes(deps, auth.authOf))
    .use(contactRoutes(deps, auth.authOf))
    .use(importRoutes(deps, auth.authOf, imports))
    .use(suppressionRoutes(deps, auth.authOf))
    .use(segmentRoutes(deps, auth.authOf))
    // templates and spin tags (issue 4)
    .use(templateRoutes(deps, auth.authOf))
    .use(spinTagRoutes(deps, auth.authOf))
    // sending infrastructure: IPs, pools, sending domains, sending nodes (issue 4)
    .use(ipRoutes(deps, auth.authOf))
    .use(ipPoolRoutes(deps, auth.authOf))
    .use(sendingDomainRoutes(deps, auth.authOf))
    .use(sendingNodeRoutes(deps, auth.authOf))
    // queue view and IP warm-up (issue 17)
    .use(deliverabilityRoutes(deps))
    // messages: sends, message reads, Resend-compatible surface (issue 4)
    .use(messageRoutes(deps, auth.authOf))
    .use(resendRoutes(deps, auth.authOf, imports, requestLog.record))
    .use(messageReadRoutes(deps))
    // open and click tracking, one-click unsubscribe: public links in sent mail (issue 6)
    .use(trackingRoutes(deps))
    // bridges (issue 5)
    .use(bridgeRoutes(deps, auth.authOf))
    // inbound: feedback-loop accounts, DMARC reports (issue 5)
    .use(feedbackLoopRoutes(deps, auth.authOf))
    .use(dmarcRoutes(deps))
    // events and statistics (issue 6)
    .use(eventRoutes(deps))
    .use(statsRoutes(deps))
    // webhooks (issue 6)
    .use(webhookRoutes(deps, auth.authOf))
    // broadcasts and their public archive (issue 15)
    .use(broadcastRoutes(deps, auth.authOf))
    .use(broadcastArchiveRoutes(deps))
    // drips, triggers and custom events (issue 16)
    .use(automationRoutes(deps, auth.authOf))
    .use(trackRoutes(deps, auth.authOf))
    // deliverability doctor (issue 17)
    .use(doctorRoutes(deps, { onListedIp: (ip, evidence) => pauseForListedIp(deps, ip, evidence) }))
    // web forms, their hosted pages and double opt-in (issue 16)
    .use(webFormRoutes(deps, auth.authOf))
    .use(webFormPublicRoutes(deps))

  table = routeTableOf(app)
  composed = app.routes as typeof composed
  if (!deps.config.validate_responses) skipResponseValidation(app.routes)
  for (const r of app.routes) {
    const check = (r.hooks?.detail as Record<symbol, unknown> | undefined)?.[SEMANTIC_CHECK]
    if (typeof check === 'function') checks.set(`${r.method} ${r.path}`, check as SemanticCheck)
  }
  // Typed as a plain instance: nothing reads the routes' inferred types (tests call app.handle),
  // and that type had reached TypeScript's instantiation depth limit in the tests that hold it.
  return { app: app as unknown as Elysia, usage, imports }
}

export type App = ReturnType<typeof buildApp>['app']
