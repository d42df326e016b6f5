/**
 * Before and after a lever, in one sitting: a Mailroom from another checkout (the "base",
 * e.g. `git worktree add /tmp/base HEAD~1`) and one from this checkout run at the same time,
 * and wrk alternates between them in short rounds (the order flips every round), so a change
 * of the machine's speed falls on both. Single runs here moved up to 40 % between minutes;
 * the ratio of medians from this script moved a few per cent.
 *
 *   bun bench/ab.ts --base DIR [--target http|accept|delivery] [--rounds 6] [--duration 4] [--messages 10000]
 *                   [--settings JSON]
 *
 * http: the authenticated GET of bench/http.ts (and a bare Bun.serve each round, for the
 * ratio the issue states); accept: POST /v1/send of bench/accept.ts with the MX silent, on a
 * fresh pair of servers every round;
 * delivery: `--messages` sends through /v1/send per round, unsigned, each side in turn,
 * timed until the SMTP sink of bench/delivery.ts has counted them all, with the server's CPU
 * per message (after one unmeasured round each, for the JIT).
 * --settings: environment variables for the change side only (MAILROOM_* settings, or the
 * runtime's own such as MIMALLOC_PURGE_DELAY), to weigh a setting rather than code (`--base .`
 * then runs this checkout on both sides, e.g. `--settings '{"MAILROOM_ACCESS_LOG":"false"}'`).
 * The base checkout needs its own node_modules (a symbolic link to this one's will do).
 * Not part of `npm run bench`: it measures a change, not the product.
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { ACCEPT_BODY, acceptServerOptions } from './accept'
import { deliveryServerOptions, sendAll, startBenchDns, startSilentMx, waitUntil } from './delivery'
import { readProcCpuMs, waitUntilIdle } from './support/proc'
import { fmtInt, fmtMs, median } from './support/report'
import * as here from './support/servers'
import { findWrk, requestScript, runWrk, WRK_INSTALL_HINT } from './support/wrk'

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    base: { type: 'string' },
    target: { type: 'string' },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    messages: { type: 'string' },
    settings: { type: 'string' },
  },
})
const base = values.base ? resolve(values.base) : null
if (!base || !existsSync(join(base, 'bench/support/servers.ts'))) {
  process.stderr.write(
    'Usage: bun bench/ab.ts --base DIR [--target http|accept|delivery] [--rounds 6] [--duration 4] [--messages 10000] [--settings JSON]   (DIR: another checkout)\n',
  )
  process.exit(2)
}
const target = values.target ?? 'http'
if (target !== 'http' && target !== 'accept' && target !== 'delivery') throw new Error(`--target is http, accept or delivery, not "${target}"`)
const rounds = Number(values.rounds ?? 6)
/** The change side's own environment variables, on top of the target's settings. */
const changeSettings = (values.settings ? JSON.parse(values.settings) : {}) as Record<string, string>
const forChange = (o: Parameters<typeof here.startMailroom>[1]): Parameters<typeof here.startMailroom>[1] => ({
  ...o,
  settings: { ...o.settings, ...changeSettings },
})
const durationS = Number(values.duration ?? 4)
const there = (await import(join(base, 'bench/support/servers.ts'))) as typeof here
if (target === 'delivery') process.exit(await deliveryAB(Number(values.messages ?? 10000)))
const wrk = findWrk()
if (!wrk) throw new Error(WRK_INSTALL_HINT)

const mx = target === 'accept' ? await startSilentMx() : null
const acceptDns = target === 'accept' ? await startBenchDns() : null
const options = target === 'accept' ? acceptServerOptions(mx!.port, acceptDns!.server) : { rateLimit: 100_000_000 }
const start = { base: () => there.startMailroom('base', options), change: () => here.startMailroom('change', forChange(options)) }
// Accept: a fresh server for every measurement. A long-lived one keeps every accepted
// message queued behind the silent MX, and the engine's work on that pile leaked into later
// rounds and into the other side's (the same change read 0.72-1.12).
const fresh = target === 'accept'
const servers = fresh ? null : { base: await start.base(), change: await start.change() }
const bare = target === 'http' ? await here.startBare() : null
const path = target === 'http' ? '/api/v2/api-keys/1' : '/v1/send'
const script = target === 'accept' ? requestScript('POST', ACCEPT_BODY) : undefined
const settings = { threads: 2, connections: target === 'http' ? 50 : 64, durationS, timeoutS: 10 }
const results: Record<string, Array<{ rps: number; p99: number }>> = { base: [], change: [], bare: [] }

const measure = async (name: string, url: string, headers: Record<string, string>) => {
  await runWrk(wrk, url, { ...settings, durationS: 1 }, headers, script)
  const r = await runWrk(wrk, url, settings, headers, script)
  const errors = Object.values(r.errors).reduce((a, b) => a + b, 0)
  if (errors > 0) throw new Error(`${name}: wrk reported errors ${JSON.stringify(r.errors)}`)
  results[name]!.push({ rps: r.requests / (r.durationUs / 1e6), p99: r.latencyMs.p99 })
}
try {
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (['base', 'change'] as const) : (['change', 'base'] as const)
    for (const name of order) {
      const s = servers?.[name] ?? (await start[name]())
      try {
        await measure(name, s.url + path, { 'content-type': 'application/json', authorization: `Bearer ${s.key}` })
      } finally {
        if (!servers) await s.dispose()
      }
    }
    if (bare) await measure('bare', bare.url + '/', {})
    process.stdout.write(
      `round ${round + 1}/${rounds}: ${Object.entries(results)
        .map(([k, v]) => (v.length ? `${k} ${fmtInt(v.at(-1)!.rps)}/s` : ''))
        .join('  ')}\n`,
    )
  }
  const rps = (name: string) => median(results[name]!.map((r) => r.rps))
  const p99 = (name: string) => median(results[name]!.map((r) => r.p99))
  for (const name of ['base', 'change', ...(bare ? ['bare'] : [])])
    process.stdout.write(`${name.padEnd(7)} ${fmtInt(rps(name))}/s (median of ${rounds}), p99 ${fmtMs(p99(name))} ms\n`)
  process.stdout.write(`change / base: ${(rps('change') / rps('base')).toFixed(3)}`)
  if (bare) process.stdout.write(`; base / bare ${(rps('base') / rps('bare')).toFixed(3)}, change / bare ${(rps('change') / rps('bare')).toFixed(3)}`)
  process.stdout.write('\n')
} finally {
  await servers?.base.dispose()
  await servers?.change.dispose()
  await there.stopAll()
  await here.stopAll()
  await mx?.close()
  await acceptDns?.close()
}
process.exit(0)

/** Delivered messages a second and the server's CPU per message, each side in turn; the medians and their ratios. */
async function deliveryAB(messages: number): Promise<number> {
  const dns = await startBenchDns()
  const sink = await here.startCountingSink()
  const options = deliveryServerOptions(sink.smtpPort, dns.server, false)
  const servers = { base: await there.startMailroom('base', options), change: await here.startMailroom('change', forChange(options)) }
  const runs: Record<'base' | 'change', Array<{ rate: number; cpuMs: number }>> = { base: [], change: [] }
  const deliver = async (name: 'base' | 'change') => {
    const server = servers[name]
    const before = (await sink.count()).messages
    const cpu = readProcCpuMs(server.pid)
    const t0 = performance.now()
    await sendAll(server, messages, 64)
    await waitUntil(`${messages} deliveries`, async () => (await sink.count()).messages - before >= messages, 600_000)
    const s = (performance.now() - t0) / 1000
    // The server goes on after the sink has counted (outcomes, statistics, checkpoints): its
    // CPU counts until it is idle, and the other side starts only then, or it would share
    // the cores with that tail (the second side of every round ran at half the first's rate).
    await waitUntilIdle(server.pid)
    return { rate: messages / s, cpuMs: ((readProcCpuMs(server.pid) ?? 0) - (cpu ?? 0)) / messages }
  }
  try {
    for (const name of ['base', 'change'] as const) await deliver(name) // unmeasured: the JIT's round
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (['base', 'change'] as const) : (['change', 'base'] as const)
      for (const name of order) runs[name].push(await deliver(name))
      const last = (name: 'base' | 'change') => `${name} ${fmtInt(runs[name].at(-1)!.rate)}/s ${runs[name].at(-1)!.cpuMs.toFixed(3)} ms`
      process.stdout.write(`round ${round + 1}/${rounds}: ${last('base')}  ${last('change')}\n`)
    }
    const rate = (name: 'base' | 'change') => median(runs[name].map((r) => r.rate))
    const cpuMs = (name: 'base' | 'change') => median(runs[name].map((r) => r.cpuMs))
    for (const name of ['base', 'change'] as const)
      process.stdout.write(`${name.padEnd(7)} ${fmtInt(rate(name))} delivered/s, server CPU ${cpuMs(name).toFixed(3)} ms a message (medians of ${rounds})\n`)
    process.stdout.write(
      `change / base: delivered ${(rate('change') / rate('base')).toFixed(3)}, CPU a message ${(cpuMs('change') / cpuMs('base')).toFixed(3)}\n`,
    )
    return 0
  } finally {
    await servers.base.dispose()
    await servers.change.dispose()
    await there.stopAll()
    await here.stopAll()
    await dns.close()
  }
}
