/**
 * Webhook deliveries per second (issue 6): 10,000 events queued for one webhook, delivered
 * by the dispatcher (fan-out, signing, POST, outcome commits) to a receiver on loopback in
 * its own process that answers 204. The stats-query part of this benchmark is separate.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config'
import { openDatabase } from '../src/db/client'
import { migrate } from '../src/db/migrate'
import { createDeps } from '../src/deps'
import { createWebhookDispatcher } from '../src/modules/webhooks/dispatcher'
import { systemClock } from '../src/lib/clock'
import { memoryLogger } from '../src/lib/logger'
import { emitPrepared } from '../src/modules/events/service'
import { createWebhook } from '../src/modules/webhooks/service'
import { fmtInt, machineInfo, markdownTable, textTable, writeDocSection } from './support/report'
import { createSecretBox, generateSecretKey } from '../src/lib/secret-box'

const AIM_PER_S = 2000

const RECEIVER = `const s = Bun.serve({ hostname: '127.0.0.1', port: 0, async fetch(r) { await r.arrayBuffer(); return new Response(null, { status: 204 }) } }); console.log(s.port)`

export async function run(argv: string[], command: string): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { events: { type: 'string', default: '10000' }, 'dry-run': { type: 'boolean', default: false } },
    allowPositionals: true,
  })
  const n = Number(values.events)
  const receiver = Bun.spawn(['bun', '-e', RECEIVER], { stdout: 'pipe' })
  const reader = receiver.stdout.getReader()
  const port = Number(new TextDecoder().decode((await reader.read()).value).trim())
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-webhooks-'))
  const db = openDatabase(join(dataDir, 'mailroom.db'))
  migrate(db, { now: systemClock.now() })
  const config = Object.freeze({ ...loadConfig({ env: {}, flags: { 'data-dir': dataDir, 'access-log': 'false' } }), webhooks_allow_private: true })
  const deps = createDeps({ db, clock: systemClock, log: memoryLogger(), config, secrets: createSecretBox(generateSecretKey()) })
  await createWebhook(deps, { endpoint: `http://127.0.0.1:${port}/hook`, events: ['*'] })
  const now = systemClock.now()
  db.$client.transaction(() => {
    for (let i = 0; i < n; i++)
      emitPrepared(db, now, { kind: 'contact.subscribed', contact_id: i + 1, list_id: 1, recipient: `c${i}@example.com`, data: { email: `c${i}@example.com` } })
  })()
  const d = createWebhookDispatcher(deps)
  const t0 = performance.now()
  await d.drain()
  const seconds = (performance.now() - t0) / 1000
  await d.stop()
  receiver.kill()
  const ok = (db.$client.query(`SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'succeeded'`).get() as { n: number }).n
  const rate = ok / seconds
  const head = ['what', 'deliveries', 'seconds', 'deliveries/s']
  const rows = [['fan-out + signed POST + outcome commit', fmtInt(ok), seconds.toFixed(2), fmtInt(Math.round(rate))]]
  process.stdout.write(`\n${textTable(head, rows)}\n`)
  const machine = machineInfo()
  if (!values['dry-run'])
    writeDocSection(
      'webhooks',
      `## Webhooks: ${fmtInt(n)} queued events to a local receiver

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command}\` (bench/webhooks.ts).

${markdownTable(head, rows)}

Aim: at least ${fmtInt(AIM_PER_S)} deliveries/s: **${rate >= AIM_PER_S ? 'met' : 'not met'}**.

- ${fmtInt(n)} events written to the log first; the clock starts when the dispatcher starts, so the figure includes the fan-out (one delivery row per event), signing (HMAC-SHA256), the POST and the outcome commit (group committer, synchronous=FULL) with its attempt row.
- Receiver: Bun.serve in its own process on loopback, answers 204. 64 requests in flight, keep-alive.
- Machine: ${machine.nproc} CPUs, ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.kernel}, Bun ${machine.bun}; load average ${machine.loadAverage} at the start.`,
    )
  return ok === n ? 0 : 1
}

if (import.meta.main) process.exit(await run(process.argv.slice(2), 'bun bench/webhooks.ts'))
