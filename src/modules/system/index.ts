import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { ErrorEnvelope, Envelope, ok, publicRoute } from '../../http/schemas'
import { VERSION } from '../../version'
import { HealthSchema, ReadySchema } from './model'
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
}
