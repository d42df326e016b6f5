import { availableParallelism } from 'node:os'
import type { DeliveryTimeouts } from '../config'
import type { Deps } from '../deps'
import { createResolver } from '../lib/dns'
import { checkGuardrails } from './guardrails'
import { createIpRotation } from './ip-rotation'
import { createMtaStsCache } from './mta-sts'
import { createDeliveryEngine, type EngineParts } from './scheduler'
import { createShaper } from './shaping'
import { createSignerPool } from './signer-pool'
import { createTransport, type TransportOptions } from './transport'

/** The configured timeouts (seconds) as the transport's options (milliseconds). */
export function transportTimeouts(t: DeliveryTimeouts): Pick<TransportOptions, 'connectTimeoutMs' | 'timeouts'> {
  const ms = (s: number) => Math.round(s * 1000)
  return {
    connectTimeoutMs: ms(t.connect),
    timeouts: { greetingMs: ms(t.greeting), mailMs: ms(t.mail), rcptMs: ms(t.rcpt), dataMs: ms(t.data), dataBlockMs: ms(t.data_block), dotMs: ms(t.dot) },
  }
}

/** How often the guardrails look at the outcomes recorded since their last sweep (guardrails.ts): a few seconds' worth each time, so no sweep holds the thread for long. */
export const GUARDRAIL_SWEEP_MS = 5_000

/**
 * How long stopping waits for deliveries in flight to end and record their outcomes. A
 * server that never answers holds a delivery for up to the greeting timeout (5 minutes, RFC
 * 5321 4.5.3.2.1), longer than a service manager waits for a stop; after the grace the
 * process stops anyway and those rows, still `sending`, go back to the queue at the next
 * start, as after a crash (at most the messages in flight may be sent twice).
 */
export const STOP_GRACE_MS = 10_000

/**
 * Assembles the delivery engine from its real parts: the DNS resolver of `dns_servers`, the
 * SMTP transport with the configured limits, DKIM signing in worker threads (one per core,
 * so signing never sits on the thread that serves HTTP), the IP pool rotation, traffic
 * shaping and warm-up (shaping.ts), and the guardrails' auto-pause check every GUARDRAIL_SWEEP_MS.
 */
export function startDelivery(deps: Deps, overrides: Partial<EngineParts> = {}) {
  const resolver = createResolver(deps.config.dns_servers)
  const transport = createTransport({
    resolver,
    mxPort: deps.config.mx_port,
    totalConcurrency: deps.config.delivery_concurrency,
    destinationConcurrency: deps.config.destination_concurrency,
    log: deps.log,
    ehlo: deps.config.hostname,
    ...transportTimeouts(deps.config.delivery_timeouts),
    requireTlsDomains: deps.config.delivery_require_tls,
    mtaSts: deps.config.delivery_mta_sts ? createMtaStsCache({ resolver, now: () => deps.clock.now(), log: deps.log }) : undefined,
  })
  const signer = createSignerPool({ size: Math.max(1, availableParallelism()) })
  const shaper = createShaper(deps, { mxHosts: (domain) => transport.mxHosts(domain) })
  const engine = createDeliveryEngine(deps, { transport, signer, rotation: createIpRotation(deps), commits: deps.commits, shaper, ...overrides })
  deps.doorbell.attach(engine)
  engine.start()
  const guard = setInterval(() => {
    try {
      checkGuardrails(deps)
    } catch (e) {
      deps.log.error('guardrails check failed', { error: e instanceof Error ? e.message : String(e) })
    }
  }, GUARDRAIL_SWEEP_MS)
  return {
    engine,
    async stop(): Promise<void> {
      clearInterval(guard)
      let timer: ReturnType<typeof setTimeout> | undefined
      const graceOver = new Promise<'grace over'>((resolve) => (timer = setTimeout(() => resolve('grace over'), STOP_GRACE_MS)))
      const ended = await Promise.race([engine.stop().then(() => 'ended' as const), graceOver])
      clearTimeout(timer)
      if (ended === 'grace over') deps.log.warn('stopping with deliveries still in flight: they are retried at the next start', { grace_ms: STOP_GRACE_MS })
      await transport.close()
      await signer.close()
    },
  }
}
