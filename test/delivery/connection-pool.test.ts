import { describe, expect, test } from 'bun:test'
import { createConnectionPool, type ConnectionPool, type Grant, type PoolSession } from '../../src/delivery/connection-pool'

/** A session whose socket "closes" on the next microtask after close() or destroy(), as a real one reports its end later. */
class FakeSession implements PoolSession {
  ended = false
  quit = false
  destroyed = false
  private listeners: Array<() => void> = []
  constructor(readonly name: string) {}
  closed() {
    return this.ended || this.quit || this.destroyed
  }
  close() {
    this.quit = true
    queueMicrotask(() => this.end())
  }
  destroy() {
    this.destroyed = true
    queueMicrotask(() => this.end())
  }
  onEnd(listener: () => void) {
    if (this.ended) listener()
    else this.listeners.push(listener)
  }
  /** The server hangs up. */
  end() {
    if (this.ended) return
    this.ended = true
    for (const l of this.listeners.splice(0)) l()
  }
}

function pool(overrides: Partial<Parameters<typeof createConnectionPool>[0]> = {}): ConnectionPool<FakeSession> {
  return createConnectionPool<FakeSession>({
    destinationConcurrency: 2,
    totalConcurrency: 3,
    idleTimeoutMs: 60_000,
    maxMessagesPerConnection: 100,
    ...overrides,
  })
}

/** Opens a session in a granted slot, as the transport does. */
function open(p: ConnectionPool<FakeSession>, grant: Grant<FakeSession>, name: string) {
  if (grant.kind !== 'new') throw new Error(`expected a new slot, got ${grant.kind}`)
  return p.adopt(grant.slot, new FakeSession(name), `${name}.mx.test`)
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('connection pool', () => {
  test('a released connection is lent again only for its destination and identity', async () => {
    const p = pool()
    const a = open(p, await p.acquire('a.test', 'ip1'), 'a1')
    p.release(a)
    expect(p.takeIdle('b.test', 'ip1')).toBeNull()
    expect(p.takeIdle('a.test', 'ip2')).toBeNull()
    expect(p.takeIdle('a.test', 'ip1')).toBe(a)
    expect(p.stats()).toEqual({ open: 1, idle: 0, waiting: 0 })
  })

  test('the destination limit makes jobs wait, FIFO, and a release hands the connection to the oldest waiter', async () => {
    const p = pool()
    const c1 = open(p, await p.acquire('a.test', 'ip1'), 'c1')
    open(p, await p.acquire('a.test', 'ip1'), 'c2')
    const order: string[] = []
    const w1 = p.acquire('a.test', 'ip1').then((g) => (order.push('w1'), g))
    const w2 = p.acquire('a.test', 'ip1').then((g) => (order.push('w2'), g))
    expect(p.stats()).toEqual({ open: 2, idle: 0, waiting: 2 })
    // A waiter of the destination goes first: no idle connection is taken past it.
    expect(p.takeIdle('a.test', 'ip1')).toBeNull()
    p.release(c1)
    expect(await w1).toEqual({ kind: 'idle', conn: c1 })
    expect(order).toEqual(['w1'])
    p.retire(c1)
    await settle()
    expect((await w2).kind).toBe('new')
    expect(order).toEqual(['w1', 'w2'])
  })

  test('at the total limit an idle connection of another destination is closed to make room', async () => {
    const p = pool({ totalConcurrency: 2 })
    const a = open(p, await p.acquire('a.test', 'ip1'), 'a')
    const b = open(p, await p.acquire('b.test', 'ip1'), 'b')
    p.release(a)
    const waiting = p.acquire('c.test', 'ip1')
    expect(a.session.quit).toBe(true)
    expect(b.session.quit).toBe(false)
    expect((await waiting).kind).toBe('new')
    expect(p.stats()).toEqual({ open: 2, idle: 0, waiting: 0 })
  })

  test('a connection is closed after maxMessagesPerConnection transactions', async () => {
    const p = pool({ maxMessagesPerConnection: 2 })
    const c = open(p, await p.acquire('a.test', 'ip1'), 'c')
    c.messages = 2
    p.release(c)
    expect(c.session.quit).toBe(true)
    await settle()
    expect(p.stats()).toEqual({ open: 0, idle: 0, waiting: 0 })
  })

  test('replace keeps the slot for a new connection; freeSlot gives it back', async () => {
    const p = pool({ destinationConcurrency: 1 })
    const c = open(p, await p.acquire('a.test', 'ip1'), 'c')
    const slot = p.replace(c)
    expect(c.session.destroyed).toBe(true)
    await settle()
    const waiting = p.acquire('a.test', 'ip1')
    expect(p.stats()).toEqual({ open: 1, idle: 0, waiting: 1 })
    p.freeSlot(slot)
    expect((await waiting).kind).toBe('new')
  })

  test('close() answers waiters, closes idle connections, lets busy ones close when released, and refuses new grants', async () => {
    const p = pool({ destinationConcurrency: 1 })
    const idle = open(p, await p.acquire('b.test', 'ip1'), 'idle')
    p.release(idle)
    const busy = open(p, await p.acquire('a.test', 'ip1'), 'busy')
    const waiting = p.acquire('a.test', 'ip1')
    const closed = p.close()
    expect(await waiting).toEqual({ kind: 'closed' })
    expect(idle.session.quit).toBe(true)
    expect(busy.session.quit).toBe(false)
    p.release(busy)
    expect(busy.session.quit).toBe(true)
    await closed
    expect(p.closing()).toBe(true)
    expect(await p.acquire('a.test', 'ip1')).toEqual({ kind: 'closed' })
    expect(p.stats()).toEqual({ open: 0, idle: 0, waiting: 0 })
  })
})
