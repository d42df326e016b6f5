/**
 * The connection pool of the outbound transport: slots, idle reuse, waiting and eviction.
 * It knows nothing of SMTP, DNS or jobs: it holds sessions (anything that can be closed and
 * reports its end) under a *destination* key and an *identity* key, and the transport
 * (transport.ts) decides what those are and opens the sessions.
 *
 * - Slots: at most `destinationConcurrency` connections (opening, busy, idle or closing) per
 *   destination and `totalConcurrency` in all. A slot is held from the grant until the
 *   connection's socket has closed, so a closing connection still counts.
 * - A connection is only lent again for the same destination and identity (takeIdle, acquire,
 *   and release's hand-over to a waiter), so mail never leaves over another source address,
 *   EHLO name or relay login than its job asked for.
 * - Waiting jobs queue FIFO per destination (`seq` orders them across identities); a freed
 *   slot or a released connection wakes the oldest waiter that can use it (no polling). When
 *   the total is reached, an idle connection of another destination is closed to make room,
 *   and an idle connection of the right destination with the wrong identity is closed
 *   likewise; the waiter gets the slot once that socket has closed.
 * - After a transaction a connection goes to a waiter of its identity, or idle (most recently
 *   used first), or is closed after `maxMessagesPerConnection` transactions. Idle ones close
 *   after `idleTimeoutMs` without use.
 * - close() refuses new grants, answers waiting jobs 'closed', closes idle connections and
 *   lets busy ones close when they are released; it waits at most 2 s for the sockets.
 */

/** What the pool needs of a session (SmtpSession has it). */
export interface PoolSession {
  /** True once the socket is gone (or going): never lent again. */
  closed(): boolean
  /** Polite close (QUIT); the socket ends later. */
  close(): void
  /** Immediate close, for a session whose slot is handed over at once. */
  destroy(): void
  onEnd(listener: () => void): void
}

/** A connection as the transport sees it. */
export interface PooledConnection<S extends PoolSession> {
  readonly session: S
  /** The host the session is connected to (for results and logs). */
  readonly host: string
  /** Transactions done on it; the pool closes it at `maxMessagesPerConnection`. */
  messages: number
  /** Set by the transport: the next transaction starts with RSET. */
  needsReset: boolean
}

/** A reserved place for one new connection: open a session in it (adopt) or give it back (freeSlot). */
export interface Slot {
  readonly destKey: string
  readonly identity: string
}

export type Grant<S extends PoolSession> = { kind: 'idle'; conn: PooledConnection<S> } | { kind: 'new'; slot: Slot } | { kind: 'closed' }

export interface PoolOptions {
  destinationConcurrency: number
  totalConcurrency: number
  idleTimeoutMs: number
  maxMessagesPerConnection: number
}

export interface ConnectionPool<S extends PoolSession> {
  /** An idle connection of (destination, identity) right now, busy for the caller; null when there is none or a job of the destination waits (FIFO). */
  takeIdle(destKey: string, identity: string): PooledConnection<S> | null
  /** Waits, FIFO per destination, for an idle connection or a slot for a new one; 'closed' once close() was called. */
  acquire(destKey: string, identity: string): Promise<Grant<S>>
  /** Puts a session opened in a granted slot into the pool, busy. */
  adopt(slot: Slot, session: S, host: string): PooledConnection<S>
  /** Gives back a granted slot in which no session was opened. */
  freeSlot(slot: Slot): void
  /** Hands a connection back after a transaction: to a waiter of its identity, idle, or closed. */
  release(conn: PooledConnection<S>): void
  /** Closes a connection; its slot comes free when the socket has closed. */
  retire(conn: PooledConnection<S>): void
  /** Destroys a connection and keeps its slot for a replacement, returned to open it in. */
  replace(conn: PooledConnection<S>): Slot
  /** True once close() was called. */
  closing(): boolean
  close(): Promise<void>
  stats(): { open: number; idle: number; waiting: number }
}

interface Conn<S extends PoolSession> extends PooledConnection<S> {
  dest: Dest<S>
  identity: string
  state: 'busy' | 'idle' | 'dead'
  timer: ReturnType<typeof setTimeout> | null
  /** Holds a slot of its destination and of the total until its socket has closed. */
  slot: boolean
  /** Being closed by us; counted so that one closing connection is not followed by needless evictions. */
  closing: boolean
}

interface Waiter<S extends PoolSession> {
  seq: number
  identity: string
  grant(g: Grant<S>): void
}

interface Dest<S extends PoolSession> {
  key: string
  /** Slots in use: connections opening, busy, idle or closing. */
  open: number
  closing: number
  /** Idle connections by identity, most recently used last. */
  idle: Map<string, Conn<S>[]>
  /** Waiting jobs by identity, each FIFO; `seq` orders them across identities. */
  waiters: Map<string, Waiter<S>[]>
  waiting: number
}

/** Creates an empty pool (see the module comment for its rules). */
export function createConnectionPool<S extends PoolSession>(opts: PoolOptions): ConnectionPool<S> {
  const destLimit = Math.max(1, opts.destinationConcurrency)
  const totalLimit = Math.max(1, opts.totalConcurrency)
  const { idleTimeoutMs, maxMessagesPerConnection: maxMessages } = opts

  const dests = new Map<string, Dest<S>>()
  /** Every idle connection, oldest first (Set keeps insertion order): the ones to evict first. */
  const idleAll = new Set<Conn<S>>()
  /** Destinations with waiting jobs, in the order they started waiting. */
  const waitingDests = new Set<Dest<S>>()
  /** Connections whose socket has not closed yet. */
  const live = new Set<Conn<S>>()
  let totalOpen = 0
  let totalClosing = 0
  let seq = 0
  let closing = false

  // Only objects made by adopt() are ever handed out as PooledConnection.
  const own = (conn: PooledConnection<S>) => conn as Conn<S>
  const destOf = (key: string): Dest<S> => {
    let d = dests.get(key)
    if (!d) dests.set(key, (d = { key, open: 0, closing: 0, idle: new Map(), waiters: new Map(), waiting: 0 }))
    return d
  }
  const forget = (d: Dest<S>) => {
    if (d.open === 0 && d.waiting === 0) dests.delete(d.key)
  }
  // A held slot keeps its destination in the map (open > 0).
  const destOfSlot = (slot: Slot): Dest<S> => dests.get(slot.destKey)!

  function takeIdleOf(d: Dest<S>, identity: string): Conn<S> | null {
    const list = d.idle.get(identity)
    while (list && list.length) {
      const conn = list.pop()!
      if (list.length === 0) d.idle.delete(identity)
      idleAll.delete(conn)
      if (conn.timer) clearTimeout(conn.timer)
      conn.timer = null
      conn.state = 'busy'
      if (!conn.session.closed()) return conn
      retire(conn)
    }
    return null
  }

  function removeIdle(conn: Conn<S>) {
    const list = conn.dest.idle.get(conn.identity)
    if (list) {
      const i = list.indexOf(conn)
      if (i >= 0) list.splice(i, 1)
      if (list.length === 0) conn.dest.idle.delete(conn.identity)
    }
    idleAll.delete(conn)
    if (conn.timer) clearTimeout(conn.timer)
    conn.timer = null
  }

  /**
   * Takes a connection out of use. Its slot is freed when its socket has closed (onClosed);
   * with `keepSlot` the caller takes the slot over at once for a replacement connection.
   */
  function retire(conn: Conn<S>, keepSlot = false) {
    if (conn.state === 'dead') return
    if (conn.state === 'idle') removeIdle(conn)
    conn.state = 'dead'
    if (keepSlot) {
      conn.slot = false
      conn.session.destroy()
      return
    }
    if (conn.slot && !conn.closing) {
      conn.closing = true
      conn.dest.closing++
      totalClosing++
    }
    conn.session.close()
  }

  function onClosed(conn: Conn<S>) {
    live.delete(conn)
    if (conn.state === 'idle') removeIdle(conn)
    if (conn.state !== 'busy') conn.state = 'dead'
    if (conn.closing) {
      conn.closing = false
      conn.dest.closing--
      totalClosing--
    }
    if (conn.slot) {
      conn.slot = false
      freeSlotOf(conn.dest)
    }
  }

  function freeSlotOf(d: Dest<S>) {
    d.open--
    totalOpen--
    forget(d)
    pump()
  }

  /**
   * What a job for (d, identity) can get right now, or null (then it waits). Reserves the slot
   * it grants. When a limit is reached and an idle connection could make room, that one is
   * closed; its slot comes free once its socket has closed, and the waiter gets it then.
   */
  function tryGrant(d: Dest<S>, identity: string): Grant<S> | null {
    const conn = takeIdleOf(d, identity)
    if (conn) return { kind: 'idle', conn }
    if (d.open >= destLimit) {
      if (d.closing === 0) {
        const other = [...d.idle.entries()].find(([id, list]) => id !== identity && list.length)
        if (other) retire(other[1][0]!)
      }
      return null
    }
    if (totalOpen >= totalLimit) {
      if (totalClosing === 0) {
        const oldest = idleAll.values().next().value
        if (oldest) retire(oldest)
      }
      return null
    }
    d.open++
    totalOpen++
    return { kind: 'new', slot: { destKey: d.key, identity } }
  }

  /** The oldest waiter of a destination, across identities. */
  function oldestWaiter(d: Dest<S>): Waiter<S>[] | null {
    let best: Waiter<S>[] | null = null
    for (const list of d.waiters.values()) if (list.length && (!best || list[0]!.seq < best[0]!.seq)) best = list
    return best
  }

  function shiftWaiter(d: Dest<S>, list: Waiter<S>[]): Waiter<S> {
    const w = list.shift()!
    if (list.length === 0) d.waiters.delete(w.identity)
    d.waiting--
    if (d.waiting === 0) waitingDests.delete(d)
    return w
  }

  /** Wakes the waiters that can proceed, oldest destination first. */
  function pump() {
    for (const d of [...waitingDests]) {
      for (;;) {
        const list = oldestWaiter(d)
        if (!list) break
        const grant = tryGrant(d, list[0]!.identity)
        if (!grant) break
        shiftWaiter(d, list).grant(grant)
      }
    }
  }

  function acquire(destKey: string, identity: string): Promise<Grant<S>> {
    if (closing) return Promise.resolve({ kind: 'closed' })
    const d = destOf(destKey)
    // FIFO: a job only goes ahead of the queue when nobody of its destination waits.
    if (d.waiting === 0) {
      const grant = tryGrant(d, identity)
      if (grant) return Promise.resolve(grant)
    }
    return new Promise<Grant<S>>((resolve) => {
      const list = d.waiters.get(identity) ?? []
      list.push({ seq: seq++, identity, grant: resolve })
      d.waiters.set(identity, list)
      d.waiting++
      waitingDests.add(d)
    })
  }

  function release(pooled: PooledConnection<S>) {
    const conn = own(pooled)
    if (conn.state === 'dead') return
    const d = conn.dest
    if (closing || conn.session.closed() || conn.messages >= maxMessages) return retire(conn)
    const waiting = d.waiters.get(conn.identity)
    if (waiting && waiting.length) return shiftWaiter(d, waiting).grant({ kind: 'idle', conn })
    conn.state = 'idle'
    const list = d.idle.get(conn.identity) ?? []
    list.push(conn)
    d.idle.set(conn.identity, list)
    idleAll.add(conn)
    conn.timer = setTimeout(() => retire(conn), idleTimeoutMs)
    conn.timer.unref?.()
    // An idle connection can make room for a waiter of another identity or destination.
    if (waitingDests.size) pump()
  }

  async function close() {
    closing = true
    for (const d of [...waitingDests]) {
      for (;;) {
        const list = oldestWaiter(d)
        if (!list) break
        shiftWaiter(d, list).grant({ kind: 'closed' })
      }
    }
    const ended = [...live].map((conn) => new Promise<void>((resolve) => conn.session.onEnd(resolve)))
    for (const conn of [...idleAll]) retire(conn)
    // Busy connections close when their transaction returns (release sees `closing`); do not
    // wait forever for a server that never answers QUIT.
    const grace = new Promise<void>((resolve) => setTimeout(resolve, 2000).unref?.())
    await Promise.race([Promise.all(ended), grace])
    for (const conn of live) conn.session.destroy()
  }

  return {
    takeIdle(destKey, identity) {
      const d = destOf(destKey)
      const conn = d.waiting === 0 ? takeIdleOf(d, identity) : null
      if (!conn) forget(d)
      return conn
    },
    acquire,
    adopt(slot, session, host) {
      const conn: Conn<S> = {
        session,
        dest: destOfSlot(slot),
        identity: slot.identity,
        host,
        messages: 0,
        state: 'busy',
        needsReset: false,
        timer: null,
        slot: true,
        closing: false,
      }
      live.add(conn)
      session.onEnd(() => onClosed(conn))
      return conn
    },
    freeSlot: (slot) => freeSlotOf(destOfSlot(slot)),
    release,
    retire: (conn) => retire(own(conn)),
    replace(pooled) {
      const conn = own(pooled)
      retire(conn, true)
      return { destKey: conn.dest.key, identity: conn.identity }
    },
    closing: () => closing,
    close,
    stats: () => ({ open: totalOpen, idle: idleAll.size, waiting: [...waitingDests].reduce((n, d) => n + d.waiting, 0) }),
  }
}
