import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { systemState } from '../../db/schema'
import { ErrorEnvelope, Envelope, ok, publicRoute } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import { VERSION } from '../../version'

/**
 * /health answers while the process runs; /ready only when the database takes a write
 * (what a load balancer or orchestrator should route on).
 */
export function systemRoutes(deps: Deps) {
  const probe = (now: number) =>
    deps.db
      .insert(systemState)
      .values({ key: 'ready_probe', value: String(now), updated_at: now })
      .onConflictDoUpdate({ target: systemState.key, set: { value: String(now), updated_at: now } })
      .run()
  return new Elysia()
    .get('/health', () => ok({ status: 'ok' as const, version: VERSION }), {
      response: { 200: Envelope(t.Object({ status: t.Literal('ok'), version: t.String() })) },
      detail: publicRoute('Liveness'),
    })
    .get(
      '/ready',
      () => {
        try {
          probe(deps.clock.now())
        } catch (e) {
          deps.log.error('readiness probe failed', { error: (e as Error).message })
          throw new AppError('unavailable', 'The database is not writable.')
        }
        return ok({ status: 'ready' as const })
      },
      {
        response: { 200: Envelope(t.Object({ status: t.Literal('ready') })), 503: ErrorEnvelope },
        detail: publicRoute('Readiness: the database takes writes'),
      },
    )
}
