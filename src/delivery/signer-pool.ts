import { startWorker, type WorkerClient } from '../lib/worker-client'
import { workerUrl } from '../lib/worker-url'
import type { DkimKey } from './dkim'
import type { SignReply, SignRequest } from './signer-worker'

export interface SignerPool {
  /** Signs one message (see dkim.ts signMessage) on a worker thread. */
  sign(raw: Buffer, key: DkimKey): Promise<Buffer>
  /** Messages posted to workers so far: keys sent (each once per worker) and batches of messages; threads started. */
  stats(): { keysSent: number; batches: number; signed: number; threads: number }
  close(): Promise<void>
}

/** Most messages in one batch posted to a worker. */
const MAX_BATCH = 32

interface Pending {
  key: number
  raw: ArrayBuffer
  resolve(signed: Buffer): void
  reject(error: Error): void
}

interface Lane {
  /** Started at the lane's first batch: a server that never signs has no signer threads (each costs several MiB). */
  client: WorkerClient<SignRequest, SignReply | null> | null
  /** Key numbers this worker has been sent. */
  known: Set<number>
  batch: Pending[]
}

/**
 * DKIM signing on `size` worker threads, round-robin. RSA-2048 costs ~0.5 ms per message here,
 * about 2,000 signatures/s per core: on the main thread that would compete with HTTP and SMTP.
 *
 * Per message only the bytes travel (issue 18): each distinct key is sent to a worker once,
 * under a number, and the worker keeps it parsed (a KeyObject), instead of the PEM being
 * cloned with every message and looked up by its text. Messages asked for in the same turn of
 * the event loop go to a worker as one batch (one postMessage each way). The message bytes
 * are copied once into a transferable buffer on the way in and transferred back, so no copy
 * is made on the way out. A worker that fails fails what it had in hand (and what is sent to
 * it later); the pool keeps using the others. Idle workers do not keep the process alive
 * (worker-client.ts).
 */
export function createSignerPool(opts: { size: number; workerUrl?: URL | string }): SignerPool {
  const size = Math.max(1, Math.floor(opts.size))
  const url = opts.workerUrl ?? workerUrl(import.meta.url, './signer-worker.ts', './delivery/signer-worker.ts')
  const lanes: Lane[] = Array.from({ length: size }, () => ({ client: null, known: new Set<number>(), batch: [] }))
  // One number per distinct key (PEM, domain, selector): a rotated key is a new number.
  let turn = 0
  let closed = false
  let scheduled = false
  const counts = { keysSent: 0, batches: 0, signed: 0 }

  // By PEM first: callers pass the same string for a domain (the scheduler caches its opened
  // keys), and a string's hash is computed once, so the lookup does not rehash 1.7 KB.
  const keyIds = new Map<string, Map<string, number>>()
  const keys = new Map<number, DkimKey>()
  const keyId = (key: DkimKey): number => {
    const pem = typeof key.privateKey === 'string' ? key.privateKey : key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    let byName = keyIds.get(pem)
    if (!byName) keyIds.set(pem, (byName = new Map()))
    const name = `${key.domain} ${key.selector}`
    let id = byName.get(name)
    if (id === undefined) {
      id = keys.size + 1
      byName.set(name, id)
      keys.set(id, { domain: key.domain, selector: key.selector, privateKey: pem })
    }
    return id
  }

  const post = (lane: Lane): void => {
    const batch = lane.batch.splice(0)
    if (batch.length === 0) return
    let client = lane.client
    if (!client) {
      try {
        client = lane.client = startWorker(url, { name: 'signer worker' })
      } catch (e) {
        for (const p of batch) p.reject(e as Error)
        return
      }
    }
    for (const p of batch) {
      if (!lane.known.has(p.key)) {
        client.send({ kind: 'key', id: p.key, key: keys.get(p.key)! })
        lane.known.add(p.key)
        counts.keysSent++
      }
    }
    counts.batches++
    counts.signed += batch.length
    client
      .request(
        { kind: 'sign', items: batch.map((p) => ({ key: p.key, raw: p.raw })) },
        batch.map((p) => p.raw),
      )
      .then(
        (reply) => {
          batch.forEach((p, i) => {
            const r = reply?.[i]
            if (r instanceof ArrayBuffer) p.resolve(Buffer.from(r))
            else p.reject(new Error(r?.error ?? 'the signer worker gave no answer for this message'))
          })
        },
        (error: Error) => {
          for (const p of batch) p.reject(error)
        },
      )
  }

  const flush = (): void => {
    scheduled = false
    for (const lane of lanes) post(lane)
  }

  return {
    sign(raw, key) {
      if (closed) return Promise.reject(new Error('signer pool closed'))
      const lane = lanes[turn]!
      turn = (turn + 1) % size
      // Copy into a buffer of its own: `raw` may be a view into a larger (pooled) ArrayBuffer.
      const copy = new Uint8Array(raw.length)
      copy.set(raw)
      return new Promise<Buffer>((resolve, reject) => {
        lane.batch.push({ key: keyId(key), raw: copy.buffer, resolve, reject })
        if (lane.batch.length >= MAX_BATCH) post(lane)
        else if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      })
    },
    stats: () => ({ ...counts, threads: lanes.filter((lane) => lane.client).length }),
    async close() {
      closed = true
      for (const lane of lanes) {
        for (const p of lane.batch.splice(0)) p.reject(new Error('signer pool closed'))
        lane.client?.terminate(new Error('signer pool closed'))
      }
    },
  }
}
