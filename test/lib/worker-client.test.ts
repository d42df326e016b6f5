import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startWorker } from '../../src/lib/worker-client'
import type { EchoRequest } from './fixtures/echo-worker'

const url = new URL('./fixtures/echo-worker.ts', import.meta.url)

describe('startWorker', () => {
  test('answers are matched to their requests; what the handler throws rejects only its request', async () => {
    const worker = startWorker<EchoRequest, unknown>(url, { name: 'echo worker' })
    try {
      const answers = await Promise.allSettled([
        worker.request({ op: 'wait', ms: 20, value: 'slow' }),
        worker.request({ op: 'throw' }),
        worker.request({ op: 'echo', value: { n: 1 } }),
      ])
      expect(answers).toEqual([
        { status: 'fulfilled', value: 'slow' },
        { status: 'rejected', reason: new Error('bad request') },
        { status: 'fulfilled', value: { n: 1 } },
      ])
      expect(worker.pending).toBe(0)
      expect(worker.answered).toBe(3)
      expect(worker.failure).toBeNull()
    } finally {
      worker.terminate()
    }
  })

  test('a worker that fails fails every request in hand and every later one, naming the worker; onFailure once', async () => {
    const failures: string[] = []
    const worker = startWorker<EchoRequest, unknown>(url, { name: 'echo worker', onFailure: (e) => failures.push(e.message) })
    try {
      const crash = worker.request({ op: 'crash' })
      // Requests are handled in order: this one waits behind the crash.
      const waiting = worker.request({ op: 'echo', value: 1 })
      const [a, b] = await Promise.allSettled([crash, waiting])
      for (const outcome of [a, b]) {
        expect(outcome.status).toBe('rejected')
        expect(((outcome as PromiseRejectedResult).reason as Error).message).toMatch(/^echo worker failed: [\s\S]*boom/)
      }
      await expect(worker.request({ op: 'echo', value: 1 })).rejects.toThrow(/^echo worker failed/)
      expect(failures).toHaveLength(1)
      expect(worker.pending).toBe(0)
    } finally {
      worker.terminate()
    }
  })

  test('terminate rejects what is in hand with the given error, and the thread closes', async () => {
    const worker = startWorker<EchoRequest, unknown>(url, { name: 'echo worker' })
    const waiting = worker.request({ op: 'wait', ms: 60_000, value: null })
    worker.terminate(new Error('pool closed'))
    await expect(waiting).rejects.toThrow('pool closed')
    await expect(worker.request({ op: 'echo', value: 1 })).rejects.toThrow('echo worker was stopped')
    await worker.closed
  })

  test('a worker keeps the process alive while it has requests in hand, and not once idle', async () => {
    const script = join(import.meta.dir, 'fixtures', 'keep-alive.ts')
    const child = Bun.spawn([process.execPath, script, url.pathname], { stdout: 'pipe', stderr: 'pipe' })
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
    expect({ code, err }).toEqual({ code: 0, err: '' })
    // The answer came although nothing but the busy worker held the process; then it ended without terminate().
    expect(out.trim()).toBe('answered late')
  })
})
