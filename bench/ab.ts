/**
 * Before and after a lever, in one sitting: a Mailroom from another checkout (the "base",
 * e.g. `git worktree add /tmp/base HEAD~1`) and one from this checkout run at the same time,
 * and wrk alternates between them in short rounds (the order flips every round), so a change
 * of the machine's speed falls on both. Single runs here moved up to 40 % between minutes;
 * the ratio of medians from this script moved a few per cent.
 *
 *   bun bench/ab.ts --base DIR [--target http|accept] [--rounds 6] [--duration 4]
 *
 * http: the authenticated GET of bench/http.ts (and a bare Bun.serve each round, for the
 * ratio the issue states); accept: POST /v1/send of bench/accept.ts with the MX silent.
 * The base checkout needs its own node_modules (a symbolic link to this one's will do).
 * Not part of `npm run bench`: it measures a change, not the product.
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { ACCEPT_BODY, acceptServerOptions } from './accept'
import { startSilentMx } from './delivery'
import { fmtInt, fmtMs, median } from './support/report'
import * as here from './support/servers'
import { findWrk, requestScript, runWrk, WRK_INSTALL_HINT } from './support/wrk'

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { base: { type: 'string' }, target: { type: 'string' }, rounds: { type: 'string' }, duration: { type: 'string' } },
})
const base = values.base ? resolve(values.base) : null
if (!base || !existsSync(join(base, 'bench/support/servers.ts'))) {
  process.stderr.write('Usage: bun bench/ab.ts --base DIR [--target http|accept] [--rounds 6] [--duration 4]   (DIR: another checkout)\n')
  process.exit(2)
}
const target = values.target ?? 'http'
if (target !== 'http' && target !== 'accept') throw new Error(`--target is http or accept, not "${target}"`)
const rounds = Number(values.rounds ?? 6)
const durationS = Number(values.duration ?? 4)
const wrk = findWrk()
if (!wrk) throw new Error(WRK_INSTALL_HINT)
const there = (await import(join(base, 'bench/support/servers.ts'))) as typeof here

const mx = target === 'accept' ? await startSilentMx() : null
const options = target === 'accept' ? acceptServerOptions(mx!.port) : { rateLimit: 100_000_000 }
const servers = { base: await there.startMailroom('base', options), change: await here.startMailroom('change', options) }
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
      const s = servers[name]
      await measure(name, s.url + path, { 'content-type': 'application/json', authorization: `Bearer ${s.key}` })
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
  await servers.base.dispose()
  await servers.change.dispose()
  await there.stopAll()
  await here.stopAll()
  await mx?.close()
}
process.exit(0)
