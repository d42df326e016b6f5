import { existsSync, mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { buildApp } from './app'
import { startCheckpointer } from './db/checkpointer'
import { startDelivery } from './delivery/runtime'
import { SERVER_BODY_CAP } from './http/body'
import { ConfigError, loadConfig, readConfigFile, SETTINGS, type Config } from './config'
import { backupDatabase, openDatabase } from './db/client'
import { migrate } from './db/migrate'
import type { Deps } from './deps'
import type { Clock } from './lib/clock'
import { createLogger } from './lib/logger'
import { publicHostNameWarning } from './lib/public-host-name'
import { recordActivity } from './modules/activity-logs/service'
import { countLiveKeys, createApiKey, listApiKeys } from './modules/api-keys/service'
import { CLI_ACTOR, ensureBuiltinRoles, findRoleByName, listRoles } from './modules/roles/service'
import { stopSegmentCountPool } from './modules/segments/count-pool'
import { startInboundListener } from './smtp/inbound/listener'
import { startStatsRollup } from './modules/stats/rollup'
import { startFeedbackLoopPoller } from './smtp/inbound/imap-poller'
import { startSubmissionListener, type SubmissionListener } from './smtp/submission'
import { loadSmtpCertificate } from './smtp/tls'
import { VERSION } from './version'
import { startWebhooks } from './modules/webhooks/dispatcher'

export const USAGE = `mailroom ${VERSION}: self-hosted email platform in one binary

Usage:
  mailroom [serve]                 run the server (the default command)
  mailroom migrate                 apply pending database migrations and exit
  mailroom keys create --role NAME --name LABEL [--rate-limit N|unlimited] [--allow ADDR|RANGE|CIDR ...]
                                   create an API key and print it (shown once)
  mailroom keys list               list API keys
  mailroom roles list              list roles
  mailroom backup PATH             write a consistent copy of the database to PATH
  mailroom --version | --help

Settings (flag, environment, or key in the --config TOML file):
${SETTINGS.map((s) => `  --${s.flag.padEnd(20)} ${s.env.padEnd(28)} ${s.describe}`).join('\n')}
  --config PATH             a TOML file with the settings above (keys as in docs/operations.md)
`

/** What main.ts hands over: the outside world, so the CLI itself reads no globals. */
export interface CliEnv {
  argv: string[]
  env: Record<string, string | undefined>
  clock: Clock
  out: (line: string) => void
  err: (line: string) => void
  /** Resolves when the process is asked to stop (SIGTERM or SIGINT). */
  stopSignal: Promise<string>
}

const configOptions = Object.fromEntries(SETTINGS.map((s) => [s.flag, { type: 'string' as const }]))

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      ...configOptions,
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
      role: { type: 'string' },
      name: { type: 'string' },
      'rate-limit': { type: 'string' },
      allow: { type: 'string', multiple: true },
    },
  })
}

class UsageError extends Error {}

/** Opens the database in the data directory, migrating first (with a backup when an upgrade is pending). */
function openStore(config: Config, clock: Clock, log: ReturnType<typeof createLogger>) {
  mkdirSync(config.data_dir, { recursive: true })
  const db = openDatabase(join(config.data_dir, 'mailroom.db'))
  const result = migrate(db, { backupDir: join(config.data_dir, 'backups'), now: clock.now() })
  if (result.applied.length) log.info('migrations applied', { applied: result.applied, backup: result.backup })
  const deps: Deps = { db, clock, log, config }
  ensureBuiltinRoles(deps)
  return deps
}

/** Runs one command; resolves to the process exit code. */
export async function runCli(io: CliEnv): Promise<number> {
  let args: ReturnType<typeof parse>
  try {
    args = parse(io.argv)
  } catch (e) {
    io.err(`mailroom: ${(e as Error).message}. See mailroom --help.`)
    return 2
  }
  const { values, positionals } = args
  if (values.help) return (io.out(USAGE), 0)
  if (values.version) return (io.out(`mailroom ${VERSION}`), 0)

  let config: Readonly<Config>
  try {
    const flags = Object.fromEntries(SETTINGS.map((s) => [s.flag, values[s.flag as keyof typeof values] as string | undefined]))
    config = loadConfig({ file: values.config ? readConfigFile(values.config) : {}, env: io.env, flags })
  } catch (e) {
    if (e instanceof ConfigError) return (io.err(`mailroom: ${e.message}`), 2)
    throw e
  }
  const log = createLogger(config.log_level, io.clock)
  const [command = 'serve', sub, ...rest] = positionals

  try {
    switch (command) {
      case 'serve':
        if (sub) throw new UsageError(`serve takes no arguments`)
        return await serve(openStore(config, io.clock, log), log, io)
      case 'migrate': {
        if (sub) throw new UsageError(`migrate takes no arguments`)
        const deps = openStore(config, io.clock, log)
        io.out('The database is up to date.')
        deps.db.$client.close()
        return 0
      }
      case 'keys':
        return keysCommand(openStore(config, io.clock, log), sub, rest, values, io)
      case 'roles': {
        if (sub !== 'list') throw new UsageError(`unknown roles command "${sub ?? ''}"; use roles list`)
        const deps = openStore(config, io.clock, log)
        for (const r of listRoles(deps, { per_page: 100 }).items)
          io.out(`${r.id}\t${r.name}\t${r.key_count} key(s)\t${r.permissions.includes('*') ? 'every permission' : `${r.permissions.length} permission(s)`}`)
        return 0
      }
      case 'backup': {
        if (!sub || rest.length) throw new UsageError('backup takes one PATH')
        const target = resolve(sub)
        if (existsSync(target)) throw new UsageError(`${target} already exists; choose a new path`)
        const deps = openStore(config, io.clock, log)
        backupDatabase(deps.db, target)
        io.out(`Backup written to ${target}`)
        return 0
      }
      default:
        throw new UsageError(`unknown command "${command}"`)
    }
  } catch (e) {
    if (e instanceof UsageError) return (io.err(`mailroom: ${e.message}. See mailroom --help.`), 2)
    throw e
  } finally {
    log.flush()
  }
}

function keysCommand(deps: Deps, sub: string | undefined, rest: string[], values: ReturnType<typeof parse>['values'], io: CliEnv): number {
  if (rest.length) throw new UsageError(`unexpected argument "${rest[0]}"`)
  if (sub === 'list') {
    for (let page = 1, last = 1; page <= last; page++) {
      const result = listApiKeys(deps, { page, per_page: 100 })
      last = result.meta.last_page
      for (const k of result.items)
        io.out(`${k.id}\t${k.prefix}\t${k.name}\t${k.role.name}\t${k.status}\t${k.rate_limit ?? 'unlimited'}/min\tlast used ${k.last_used_at ?? 'never'}`)
    }
    return 0
  }
  if (sub !== 'create') throw new UsageError(`unknown keys command "${sub ?? ''}"; use keys create or keys list`)
  if (!values.role || !values.name) throw new UsageError('keys create needs --role NAME and --name LABEL')
  const role = findRoleByName(deps, values.role)
  if (!role) throw new UsageError(`no role named "${values.role}"; mailroom roles list shows them`)
  let rate_limit: number | null | undefined
  if (values['rate-limit'] !== undefined) {
    const v = values['rate-limit']
    if (v === 'unlimited') rate_limit = null
    else if (/^\d+$/.test(v) && Number(v) >= 1) rate_limit = Number(v)
    else throw new UsageError('--rate-limit takes a whole number of requests per minute, or unlimited')
  }
  let created: ReturnType<typeof createApiKey>
  try {
    created = createApiKey(deps, CLI_ACTOR, { name: values.name, role_id: role.id, rate_limit, allowed_ips: values.allow ?? [] })
  } catch (e) {
    const details = (e as { details?: Record<string, string[]> }).details
    if (details) throw new UsageError(Object.values(details).flat().join('; '))
    throw e
  }
  recordActivity(deps, {
    actor_key_id: null,
    actor_name: CLI_ACTOR.name,
    action: 'api_keys.create',
    target_type: 'api_keys',
    target_id: String(created.view.id),
    method: null,
    path: null,
    ip: null,
    status: 201,
    outcome: 'success',
  })
  io.out(`Created API key ${created.view.id} "${created.view.name}" with role ${role.name}. This is the only time the key is shown:`)
  io.out(created.key)
  return 0
}

async function serve(deps: Deps, log: ReturnType<typeof createLogger>, io: CliEnv): Promise<number> {
  // Loud, on stderr and in the log: DNS records and bridge hosts are built from this name (issue 13 item 17).
  const hostWarning = publicHostNameWarning(deps.config.hostname)
  if (hostWarning) (log.warn('no public host name', { hostname: deps.config.hostname }), io.err(`mailroom: WARNING: ${hostWarning}`))
  const { app, usage, imports, sending } = buildApp(deps)
  const { host, port } = deps.config.http_listen
  app.listen({ hostname: host, port, maxRequestBodySize: SERVER_BODY_CAP })
  const bound = app.server!
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound.port}`
  log.info('listening', { url, version: VERSION, data_dir: resolve(deps.config.data_dir) })
  io.out(`Mailroom ${VERSION} listening on ${url} (data in ${resolve(deps.config.data_dir)})`)
  if (countLiveKeys(deps) === 0) io.out('No API keys yet. Create the first one with:\n  mailroom keys create --role Administrator --name admin')

  // Imports that were queued or under way when the server last stopped go on from their last committed batch.
  imports.kick()
  const checkpoints = startCheckpointer(join(deps.config.data_dir, 'mailroom.db'), log)
  // Recipients left mid-delivery by the last process go back in the queue, then delivery starts.
  const delivery = startDelivery(deps, sending)
  // SMTP listeners (issue 5): start here, stop below
  // Submission for bridges (smtp_listen STARTTLS, smtp_tls_listen implicit TLS); an address in use stops the start with one line.
  let submission: SubmissionListener | null = null
  if (deps.config.smtp_listen || deps.config.smtp_tls_listen) {
    try {
      submission = await startSubmissionListener(deps, sending)
    } catch (e) {
      io.err(`mailroom: ${(e as Error).message}`)
      await app.stop()
      await delivery.stop()
      await imports.stop()
      await checkpoints.stop()
      deps.db.$client.close()
      return 1
    }
    const at = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`
    if (submission.port !== null) io.out(`SMTP submission listening on ${at(deps.config.smtp_listen!.host, submission.port)} (STARTTLS)`)
    if (submission.tlsPort !== null) io.out(`SMTP submission listening on ${at(deps.config.smtp_tls_listen!.host, submission.tlsPort)} (implicit TLS)`)
  }
  // Inbound bounces, complaints and DMARC reports (mx_listen, off by default), with STARTTLS on the listeners' certificate.
  const inbound = deps.config.mx_listen ? await startInboundListener(deps, { tls: await loadSmtpCertificate(deps) }) : null
  const feedbackLoops = startFeedbackLoopPoller(deps)
  // Background jobs of issue 6 (webhook dispatch, statistics rollups): start here, stop below
  const webhooks = startWebhooks(deps, { commits: sending.commits })
  const statsRollup = startStatsRollup(deps)

  const flusher = setInterval(() => {
    try {
      usage.flush()
    } catch (e) {
      log.error('could not record key usage', { error: (e as Error).message })
    }
  }, 1000)

  const signal = await io.stopSignal
  log.info('stopping', { signal })
  clearInterval(flusher)
  await app.stop()
  await submission?.close()
  await inbound?.close()
  await feedbackLoops.stop()
  await statsRollup.stop()
  await webhooks.stop()
  await delivery.stop()
  await imports.stop()
  // Segment count worker threads (started on the first large count), before the last checkpoint
  await stopSegmentCountPool(deps)
  usage.flush()
  await checkpoints.stop()
  deps.db.$client.close()
  io.out('Mailroom stopped.')
  return 0
}
