import type { Deps } from '../../deps'
import { systemState } from '../../db/schema'
import { AppError } from '../../lib/errors'

/**
 * Readiness: a write to `system_state` must succeed (what a load balancer or orchestrator
 * should route on); 503 `unavailable` otherwise, with the cause in the log only.
 */
export function assertWritable(deps: Pick<Deps, 'db' | 'clock' | 'log'>): void {
  const now = deps.clock.now()
  try {
    deps.db
      .insert(systemState)
      .values({ key: 'ready_probe', value: String(now), updated_at: now })
      .onConflictDoUpdate({ target: systemState.key, set: { value: String(now), updated_at: now } })
      .run()
  } catch (e) {
    deps.log.error('readiness probe failed', { error: (e as Error).message })
    throw new AppError('unavailable', 'The database is not writable.')
  }
}
