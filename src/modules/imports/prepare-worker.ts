/**
 * Worker thread of an import (see prepare.ts): reads and checks the file one batch ahead of
 * the runner, one batch per `next` message, so at most one unwritten batch waits in memory.
 */
import type { FieldDefinition } from '../custom-fields/values'
import type { ImportFormat } from './source'
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

export type PrepareRequest = PrepareStart | { type: 'next' }
export type PrepareReply = ({ type: 'batch' } & PreparedBatch) | { type: 'end' } | { type: 'error'; message: string }

declare const self: Worker

let batches: AsyncGenerator<PreparedBatch> | null = null
// Requests are answered strictly in order.
let queue: Promise<void> = Promise.resolve()

async function answer(req: PrepareRequest): Promise<PrepareReply> {
  try {
    if (req.type === 'start') {
      batches = preparedBatches(req.path, req.format, req.skip, req.batchRows, {
        mapping: req.mapping,
        defs: new Map(req.defs.map((d) => [d.key, d])),
        mode: req.mode,
      })
      return { type: 'end' }
    }
    if (!batches) return { type: 'error', message: 'the import worker was not started' }
    const next = await batches.next()
    return next.done ? { type: 'end' } : { type: 'batch', ...next.value }
  } catch (e) {
    return { type: 'error', message: (e as Error).message }
  }
}

self.onmessage = (event: MessageEvent<PrepareRequest>) => {
  const req = event.data
  queue = queue.then(async () => {
    const reply = await answer(req)
    if (req.type !== 'start') self.postMessage(reply)
  })
}
