/** Levels in increasing severity. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
  enabled(level: LogLevel): boolean
}

/**
 * JSON-lines logger. Lines are buffered and written once per event-loop turn, because a
 * write system call per request costs more than the request itself on these machines.
 */
export function createLogger(level: LogLevel, clock: { now(): number }, sink: (chunk: string) => void = (s) => process.stderr.write(s)): Logger & { flush(): void } {
  const min = LOG_LEVELS.indexOf(level)
  let buffer = ''
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (buffer) {
      const out = buffer
      buffer = ''
      sink(out)
    }
  }
  const write = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (LOG_LEVELS.indexOf(lvl) < min) return
    buffer += JSON.stringify({ time: new Date(clock.now()).toISOString(), level: lvl, msg, ...fields }) + '\n'
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    enabled: (lvl) => LOG_LEVELS.indexOf(lvl) >= min,
    flush,
  }
}

/** A logger that drops everything, or collects lines for a test to read. */
export function memoryLogger(): Logger & { lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> = []
  const at = (level: LogLevel) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields })
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), enabled: () => true }
}
