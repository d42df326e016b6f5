import { availableParallelism } from 'node:os'
import type { Deps } from '../deps'
import { createResolver } from '../lib/dns'
import { checkGuardrails } from './guardrails'
import { createIpRotation } from './ip-rotation'
import { createDeliveryEngine, type EngineParts } from './scheduler'
import { createShaper } from './shaping'
import { createSignerPool } from './signer-pool'
import { createTransport } from './transport'

/**
 * Assembles the delivery engine from its real parts: the DNS resolver of `dns_servers`, the
 * SMTP transport with the configured limits, DKIM signing in worker threads (one per core,
 * so signing never sits on the thread that serves HTTP), the IP pool rotation, traffic
 * shaping and warm-up (shaping.ts), and the guardrails' auto-pause check once a minute.
 */
export function startDelivery(deps: Deps, overrides: Partial<EngineParts> = {}) {
  const transport = createTransport({
    resolver: createResolver(deps.config.dns_servers),
    mxPort: deps.config.mx_port,
    totalConcurrency: deps.config.delivery_concurrency,
    destinationConcurrency: deps.config.destination_concurrency,
    log: deps.log,
    ehlo: deps.config.hostname,
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
  }, 60_000)
  return {
    engine,
    async stop(): Promise<void> {
      clearInterval(guard)
      await engine.stop()
      await transport.close()
      await signer.close()
    },
  }
}
