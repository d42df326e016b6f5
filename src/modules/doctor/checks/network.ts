import net from 'node:net'
import type { CheckResult } from '../model'
import { result } from './result'

const PROBE_TIMEOUT_MS = 10_000

/** What happened when connecting: the first line the server sent, or why there was none. */
function probe(host: string, port: number): Promise<{ ok: true; banner: string } | { ok: false; error: string }> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port })
    let settled = false
    let received = ''
    const done = (outcome: { ok: true; banner: string } | { ok: false; error: string }) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(outcome)
    }
    const timer = setTimeout(
      () => done({ ok: false, error: `no answer within ${PROBE_TIMEOUT_MS / 1000} s (filtered: the connection is dropped)` }),
      PROBE_TIMEOUT_MS,
    )
    socket.on('error', (err) => done({ ok: false, error: (err as NodeJS.ErrnoException).code ?? err.message }))
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
      const end = received.indexOf('\n')
      if (end >= 0) done({ ok: true, banner: received.slice(0, end).trim() })
    })
    socket.on('end', () => done({ ok: false, error: 'the connection was closed before the server greeted' }))
  })
}

/**
 * Outbound TCP 25: many clouds and home ISPs block it, and then no direct delivery ever
 * works. Connecting to a configured SMTP server and reading its greeting (RFC 5321 section
 * 4.3.1: "220") proves the way out is open; skipped when no probe host is set (offline).
 */
export async function checkOutboundPort(probeHost: { host: string; port: number } | null): Promise<CheckResult> {
  const title = 'Outbound SMTP (TCP 25) is open'
  if (!probeHost) return result('network', 'network.port25', null, title, 'skipped', 'No probe host is set (doctor_probe is off).')
  const target = `${probeHost.host.includes(':') ? `[${probeHost.host}]` : probeHost.host}:${probeHost.port}`
  const outcome = await probe(probeHost.host, probeHost.port)
  if (outcome.ok && outcome.banner.startsWith('220'))
    return result('network', 'network.port25', null, title, 'pass', `${target} answered: ${outcome.banner.slice(0, 200)}`)
  if (outcome.ok)
    return result(
      'network',
      'network.port25',
      null,
      title,
      'warn',
      `${target} answered, but not with an SMTP greeting: ${outcome.banner.slice(0, 200)}`,
      `Point doctor_probe (MAILROOM_DOCTOR_PROBE) at an SMTP server, such as a mail exchanger of a large provider on port 25.`,
    )
  return result(
    'network',
    'network.port25',
    null,
    title,
    'fail',
    `Could not reach ${target}: ${outcome.error}.`,
    `Ask your hosting provider to open outbound TCP port 25 for this server (many block it by default), or deliver through a relay sending node (Sending > Nodes) on port 587.`,
  )
}
