import { expect, test } from 'bun:test'
import { createLogger } from '../../src/lib/logger'

test('each line is one JSON object: time, level, message, then the fields in order; lines below the level are dropped', () => {
  const written: string[] = []
  let now = Date.parse('2026-03-01T12:00:00.000Z')
  const log = createLogger('info', { now: () => now }, (s) => void written.push(s))
  log.debug('hidden', { a: 1 })
  log.info('request', { request_id: 'r1', path: '/a"b\n', status: 200, ms: 0.5, skipped: undefined })
  log.info('bare')
  log.warn('empty', {})
  now += 1
  log.info('nested', { data: { list: [1, 'two'] } })
  log.flush()
  const lines = written.join('').split('\n')
  expect(lines.pop()).toBe('')
  expect(lines.map((l) => JSON.parse(l))).toEqual([
    { time: '2026-03-01T12:00:00.000Z', level: 'info', msg: 'request', request_id: 'r1', path: '/a"b\n', status: 200, ms: 0.5 },
    { time: '2026-03-01T12:00:00.000Z', level: 'info', msg: 'bare' },
    { time: '2026-03-01T12:00:00.000Z', level: 'warn', msg: 'empty' },
    { time: '2026-03-01T12:00:00.001Z', level: 'info', msg: 'nested', data: { list: [1, 'two'] } },
  ])
  expect(Object.keys(JSON.parse(lines[0]!))).toEqual(['time', 'level', 'msg', 'request_id', 'path', 'status', 'ms'])
})

test('an error is written at once, with what was buffered before it', () => {
  const written: string[] = []
  const log = createLogger('info', { now: () => 0 }, (s) => void written.push(s))
  log.info('first')
  expect(written).toEqual([])
  log.error('broke', { code: 'x' })
  expect(written).toHaveLength(1)
  expect(
    written[0]!
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l).msg),
  ).toEqual(['first', 'broke'])
})

test('a message is escaped like any JSON string, and fields named time, level or msg replace those', () => {
  const written: string[] = []
  const log = createLogger('info', { now: () => 0 }, (s) => void written.push(s))
  log.info('a "quoted"\nmessage', { n: 1 })
  log.info('kept', { msg: 'replaced', level: 'custom' })
  log.flush()
  const lines = written
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
  expect(lines).toEqual([
    { time: '1970-01-01T00:00:00.000Z', level: 'info', msg: 'a "quoted"\nmessage', n: 1 },
    { time: '1970-01-01T00:00:00.000Z', level: 'custom', msg: 'replaced' },
  ])
})
