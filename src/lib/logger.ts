import { writeSync } from 'node:fs'

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

/** Bytes after which the buffer is written at once; below it, at most FLUSH_MS later. */
const FLUSH_BYTES = 32 * 1024
const FLUSH_MS = 50

/**
 * JSON-lines logger. Lines are buffered and written in batches (every 50 ms or 32 KiB),
 * because a write system call per request costs more than the request itself on these
 * machines. Writes are synchronous, so `flush()` before exit loses nothing; errors are
 * written at once.
 */
export function createLogger(level: LogLevel, clock: { now(): number }, sink: (chunk: string) => void = (s) => writeSync(2, s)): Logger & { flush(): void } {
  const min = LOG_LEVELS.indexOf(level)
  let buffer = ''
  let timer: ReturnType<typeof setTimeout> | null = null
  const flush = () => {
    if (timer) clearTimeout(timer)
    timer = null
    if (buffer) {
      const out = buffer
      buffer = ''
      sink(out)
    }
  }
  // A busy server writes many lines in the same millisecond (the access log): the time is
  // formatted once per millisecond (toISOString was 40 % of a line's cost, issue 18).
  let lastMs = Number.NaN
  let lastIso = ''
  const isoNow = () => {
    const now = clock.now()
    if (now !== lastMs) {
      lastMs = now
      lastIso = new Date(now).toISOString()
    }
    return lastIso
  }
  /**
   * One JSON line: `time`, `level` and `msg` first, then the fields. Written as a string
   * around the fields' own JSON, which costs 60 % of stringifying a merged copy (issue 18);
   * fields named like the first three replace them, as they always have.
   */
  const line = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>): string => {
    if (fields && ('time' in fields || 'level' in fields || 'msg' in fields)) return JSON.stringify({ time: isoNow(), level: lvl, msg, ...fields }) + '\n'
    const rest = fields === undefined ? '{}' : JSON.stringify(fields)
    return `{"time":"${isoNow()}","level":"${lvl}","msg":${JSON.stringify(msg)}${rest.length > 2 ? `,${rest.slice(1)}` : '}'}\n`
  }
  const write = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (LOG_LEVELS.indexOf(lvl) < min) return
    buffer += line(lvl, msg, fields)
    if (lvl === 'error' || buffer.length >= FLUSH_BYTES) flush()
    else if (!timer) timer = setTimeout(flush, FLUSH_MS)
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
