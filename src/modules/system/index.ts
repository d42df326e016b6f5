import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, ErrorEnvelope, Envelope, ok, publicRoute, requires } from '../../http/schemas'
import { VERSION } from '../../version'
import { HealthSchema, OverviewSchema, ReadySchema, SettingsSchema } from './model'
import { systemOverview, systemSettings } from './overview'
import { assertWritable } from './service'

/**
 * /health answers while the process runs; /ready only when the database takes a write
 * (what a load balancer or orchestrator should route on).
 */
export function systemRoutes(deps: Deps) {
  return new Elysia()
    .get('/health', () => ok({ status: 'ok' as const, version: VERSION }), {
      response: { 200: Envelope(HealthSchema) },
      detail: publicRoute('Liveness'),
    })
    .get('/ready', () => (assertWritable(deps), ok({ status: 'ready' as const })), {
      response: { 200: Envelope(ReadySchema), 503: ErrorEnvelope },
      detail: publicRoute('Readiness: the database takes writes'),
    })
    .get('/api/v2/system/overview', () => ok(systemOverview(deps)), {
      response: { 200: Envelope(OverviewSchema), ...commonErrors },
      detail: requires('statistics.read', 'Queue depth, oldest queued message and warnings', { tags: ['system'] }),
    })
    .get('/api/v2/system/settings', () => ok(systemSettings(deps)), {
      response: { 200: Envelope(SettingsSchema), ...commonErrors },
      detail: requires('settings.read', 'The effective server settings (no secrets)', { tags: ['system'] }),
    })
}
