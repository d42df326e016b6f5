import type { Deps } from '../../deps'
import { doctorSummaryLine, recordAndAct, runDoctor, type DoctorHooks } from './service'

/** How often the server runs the doctor by itself. */
export const DOCTOR_INTERVAL_MS = 24 * 3_600_000

export interface DoctorRunner {
  /** Stops the timer; a run under way finishes its lookups but stores nothing. */
  stop(): Promise<void>
}

/**
 * Runs the doctor at start (one summary line in the log, at warn level when something fails)
 * and then once a day, in the background: lookups can take seconds, and the start must not
 * wait for them, nor the stop (a run still under way then stores nothing).
 */
export function startDoctor(deps: Deps, hooks: DoctorHooks = {}, intervalMs = DOCTOR_INTERVAL_MS): DoctorRunner {
  let stopped = false
  const run = async () => {
    try {
      const report = await runDoctor(deps)
      if (stopped) return
      const changes = recordAndAct(deps, report, hooks)
      const fields = { ...report.summary, changes: changes.length }
      if (report.summary.fail) deps.log.warn(doctorSummaryLine(report), fields)
      else deps.log.info(doctorSummaryLine(report), fields)
    } catch (e) {
      if (!stopped) deps.log.error('deliverability doctor failed', { error: (e as Error).message })
    }
  }
  void run()
  const timer = setInterval(() => void run(), intervalMs)
  return {
    async stop() {
      stopped = true
      clearInterval(timer)
    },
  }
}
