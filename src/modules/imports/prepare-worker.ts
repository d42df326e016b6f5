/**
 * Worker thread of an import (see prepare.ts): reads and checks the file one batch ahead of
 * the runner, one batch per `next` request (worker-client.ts), so at most one unwritten batch
 * waits in memory.
 */
import type { FieldDefinition } from '../custom-fields/values'
import type { ImportFormat } from './source'
import { serveRequests } from '../../lib/worker-serve'
import { preparedBatches, type PreparedBatch } from './prepare'

export interface PrepareStart {
  type: 'start'
  path: string
  format: ImportFormat
  skip: number
  batchRows: number
  mapping: Record<string, string>
  defs: FieldDefinition[]
  mode: 'skip' | 'update'
}

/** `start` is sent without an answer wanted; each `next` is answered with a batch or null at the end. */
export type PrepareRequest = PrepareStart | { type: 'next' }

let batches: AsyncGenerator<PreparedBatch> | null = null

// worker-serve handles messages one at a time, in order: `start` is done before the first `next`.
serveRequests<PrepareRequest, PreparedBatch | null>(async (req) => {
  if (req.type === 'start') {
    batches = preparedBatches(req.path, req.format, req.skip, req.batchRows, {
      mapping: req.mapping,
      defs: new Map(req.defs.map((d) => [d.key, d])),
      mode: req.mode,
    })
    return null
  }
  if (!batches) throw new Error('the import worker was not started')
  // No forced collection after each batch (decision 75): on two cores it ran beside the
  // server thread's inserts and slowed them by a quarter, for no peak memory measurable.
  const next = await batches.next()
  return next.done ? null : next.value
})
