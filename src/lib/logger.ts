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
  const write = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (LOG_LEVELS.indexOf(lvl) < min) return
    buffer += JSON.stringify({ time: new Date(clock.now()).toISOString(), level: lvl, msg, ...fields }) + '\n'
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
