import { chmodSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { buildApp } from './app'
import { startCheckpointer } from './db/checkpointer'
import { startDelivery } from './delivery/runtime'
import { SERVER_BODY_CAP } from './http/body'
import { ConfigError, defaultOf, readConfigFile, resolveConfig, SETTINGS, type ChangedSetting, type Config } from './config'
import { backupDatabase, openDatabaseFile } from './db/client'
import { migrate } from './db/migrate'
import { createDeps, type Deps } from './deps'
import { createTextPool } from './lib/html-text-pool'
import type { Clock } from './lib/clock'
import { createLogger } from './lib/logger'
import { publicHostNameWarning } from './lib/public-host-name'
import { createSecretBox, generateSecretKey, loadKeyRing, parseSecretKey, SecretKeyError, writeKeyFile, type SecretBox } from './lib/secret-box'
import { hasSealedSecrets, sealStoredSecrets } from './modules/system/secrets'
import { recordActivity } from './modules/activity-logs/service'
import { countAdmins, createAdmin, findAdminByEmail, issueSetupToken, listAdmins, passwordProblem, resetAdminPassword } from './modules/admins/service'
import { checkEmail } from './lib/email'
import { countLiveKeys, createApiKey, listApiKeys } from './modules/api-keys/service'
import { ADMINISTRATOR, CLI_ACTOR, ensureBuiltinRoles, findRoleByName, listRoles } from './modules/roles/service'
import { restoreMemberIndexes } from './modules/segments/service'
import { stopSegmentCountPool } from './modules/segments/count-pool'
import { startInboundListener } from './smtp/inbound/listener'
import { startStatsRollup } from './modules/stats/rollup'
import { startBroadcasts } from './modules/broadcasts/runner'
import { startFeedbackLoopPoller } from './smtp/inbound/imap-poller'
import { startSubmissionListener, type SubmissionListener } from './smtp/submission/server'
import { consoleDevRoutes } from './http/web'
import { loadSmtpCertificate } from './smtp/tls'
import { VERSION } from './version'
import { startWebhooks } from './modules/webhooks/dispatcher'
import { doctorSummaryLine, runAndRecordDoctor } from './modules/doctor/service'
import { startDoctor } from './modules/doctor/runner'
import { pauseForListedIp } from './delivery/guardrails'
import { createAutomationRunner } from './modules/automations/runner'

/**
 * Seconds an idle keep-alive connection stays open. Elysia's default closes it after 30-34 s
 * (30 s, checked every 4 s), while clients keep pooled connections longer (Go's 90 s, Bun's
 * fetch 5 minutes) and load balancers 60 s or more. A request written just as the server
 * closes the connection never reaches it, and for a POST the client gets ECONNRESET with
 * nothing in the server's log (Bun's fetch retries only idempotent requests;
 * oven-sh/bun#35817). So the server's idle timeout outlasts the usual clients' (issue 18:
 * the long run's one error looked like this, a POST reset with no trace on the server).
 */
export const HTTP_IDLE_TIMEOUT_S = 120

export const USAGE = `mailroom ${VERSION}: self-hosted email platform in one binary

Usage:
  mailroom [serve]                 run the server (the default command)
  mailroom migrate                 apply pending database migrations and exit
  mailroom keys create --role NAME --name LABEL [--rate-limit N|unlimited] [--allow ADDR|RANGE|CIDR ...]
                                   create an API key and print it (shown once)
  mailroom keys list               list API keys
  mailroom roles list              list roles
  mailroom admin create --email E [--role NAME]
                                   create a console administrator (role Administrator unless named);
                                   the password is read from stdin, or asked for on a terminal
  mailroom admin reset-password --email E
                                   set a new password (read the same way); ends the person's sessions
  mailroom admin list              list console administrators
  mailroom backup PATH             write a consistent copy of the database to PATH
  mailroom doctor                  run the deliverability checks, print each with its fix (exit code 1 on a failure)
  mailroom secrets rotate-key      seal every stored secret under a new key (stop the server first)
  mailroom --version | --help

Commands other than serve and migrate need an existing database in the data directory.

Settings (flag, environment, or key in the --config TOML file):
${SETTINGS.map((s) => `  --${s.flag.padEnd(24)} ${s.env.padEnd(33)} ${s.describe} (default: ${defaultOf(s)})`).join('\n')}
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
  /** How the operator runs this program, for the hints it prints: "./mailroom", "npx bun src/main.ts"; "mailroom" when absent. */
  program?: string
  /**
   * A password for `admin create` / `reset-password`: the first line of stdin when it is not
   * a terminal, else asked for twice without echo. Never from argv: the process list shows it.
   */
  readPassword?: (prompt: string) => Promise<string>
  /**
   * Sets what the runtime reads only when it starts: JavaScriptCore's heap sized for
   * `heapBytes` of memory (`js_heap_ram_mib`; null leaves the runtime's sizing) and the
   * allocator's purge delay. main.ts re-executes the process (same pid, arguments and
   * descriptors) with them in the environment; returns when they are already applied. Absent
   * in tests that run the CLI in-process.
   */
  tuneRuntime?: (heapBytes: number | null) => void
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
      email: { type: 'string' },
      // Declared only to refuse it with a reason (see adminCommand).
      password: { type: 'string' },
    },
  })
}

class UsageError extends Error {}
/** A command that cannot go on (no database, an unsafe data directory, the wrong key): one line, exit code 1. */
class StopError extends Error {}

/**
 * Stored text as it is safe to print on a terminal: control characters (C0, DEL, C1) and
 * bidirectional overrides escaped, so a name cannot move the cursor, recolour or ring.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const n = c.charCodeAt(0)
    return n < 0x100 ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`
  })
}

/**
 * The data directory holds the database, its backups and (by default) the secret key: it is
 * made 0700. One writable by group or others stops the start (anyone there could swap the
 * database or the key); one an older version made 0755 is narrowed to 0700.
 */
function prepareDataDir(dir: string, log: ReturnType<typeof createLogger>): void {
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    return
  }
  const mode = statSync(dir).mode & 0o777
  if (mode & 0o022)
    throw new StopError(`the data directory ${dir} is writable by ${mode & 0o002 ? 'anyone' : 'its group'} (mode ${mode.toString(8)}); run chmod 700 ${dir}`)
  if (mode & 0o077) {
    try {
      chmodSync(dir, 0o700)
      log.warn('data directory narrowed to mode 700', { data_dir: dir, was: mode.toString(8) })
    } catch (e) {
      // Not its owner: the files inside are 0600 all the same.
      log.warn('data directory is readable by others; chmod 700 it', { data_dir: dir, mode: mode.toString(8), error: (e as Error).message })
    }
  }
}

/** The box that seals stored secrets: the key from secret_key, or from the key file (made on a database without sealed secrets). */
function secretBoxFor(config: Config, create: boolean): { box: SecretBox; created: boolean } {
  if (config.secret_key) return { box: createSecretBox(parseSecretKey(config.secret_key, 'secret_key')), created: false }
  const path = resolve(config.secret_key_file)
  try {
    const ring = loadKeyRing(path, create)
    return { box: createSecretBox(ring.primary, ring.older), created: ring.created }
  } catch (e) {
    if (e instanceof SecretKeyError) throw e
    throw new SecretKeyError(`the secret key file ${path} cannot be read or made (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`)
  }
}

/**
 * Opens the database in the data directory, migrating first (with a backup when an upgrade is
 * pending), then seals any stored secret not yet sealed under the current key. Only `serve`
 * and `migrate` make a new database (`create`): another command run from the wrong directory
 * must not make an empty one and print a key the server never sees.
 */
function openStore(config: Config, clock: Clock, log: ReturnType<typeof createLogger>, opts: { create: boolean }) {
  const dir = resolve(config.data_dir)
  const file = join(dir, 'mailroom.db')
  if (!opts.create && !existsSync(file))
    throw new StopError(
      `no database in ${dir} (the data directory this command looked at); point --data-dir or MAILROOM_DATA_DIR at the server's data directory, or run mailroom migrate to make a new one there`,
    )
  prepareDataDir(dir, log)
  const db = openDatabaseFile(file, { cacheMiB: config.sqlite_cache_mib })
  try {
    const result = migrate(db, { backupDir: join(dir, 'backups'), now: clock.now() })
    if (result.applied.length) log.info('migrations applied', { applied: result.applied, backup: result.backup })
    const { box, created } = secretBoxFor(config, !hasSealedSecrets({ db }))
    if (created) log.info('secret key file created', { path: resolve(config.secret_key_file), key_id: box.keyId })
    const deps = createDeps({ db, clock, log, config, secrets: box })
    const sealed = sealStoredSecrets(deps, box)
    if (sealed) {
      // The WAL still holds the pages as they were: fold it into the file and empty it.
      db.$client.run('PRAGMA wal_checkpoint(TRUNCATE)')
      log.info('stored secrets sealed', { count: sealed, key_id: box.keyId })
    }
    ensureBuiltinRoles(deps)
    const rebuilt = restoreMemberIndexes(deps)
    if (rebuilt.length) log.info('segment member indexes rebuilt', { segment_ids: rebuilt })
    return deps
  } catch (e) {
    db.$client.close()
    if (e instanceof SecretKeyError)
      throw new StopError(
        `${e.message}. Secrets in the database open only with the key they were sealed with: set secret_key_file (MAILROOM_SECRET_KEY_FILE) or MAILROOM_SECRET_KEY to it`,
      )
    throw e
  }
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
  let changed: ChangedSetting[]
  try {
    const flags = Object.fromEntries(SETTINGS.map((s) => [s.flag, values[s.flag as keyof typeof values] as string | undefined]))
    ;({ config, changed } = resolveConfig({ file: values.config ? readConfigFile(values.config) : {}, env: io.env, flags }))
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
        io.tuneRuntime?.(config.js_heap_ram_mib > 0 ? config.js_heap_ram_mib * 1024 * 1024 : null)
        log.info('settings', { changed: Object.fromEntries(changed.map((c) => [c.key, { value: c.value, from: c.from }])) })
        return await serve(openStore(config, io.clock, log, { create: true }), log, io)
      case 'migrate': {
        if (sub) throw new UsageError(`migrate takes no arguments`)
        const deps = openStore(config, io.clock, log, { create: true })
        io.out('The database is up to date.')
        deps.db.$client.close()
        return 0
      }
      case 'keys':
        if (sub !== 'list' && sub !== 'create') throw new UsageError(`unknown keys command "${sub ?? ''}"; use keys create or keys list`)
        return keysCommand(openStore(config, io.clock, log, { create: false }), sub, rest, values, io)
      case 'roles': {
        if (sub !== 'list') throw new UsageError(`unknown roles command "${sub ?? ''}"; use roles list`)
        const deps = openStore(config, io.clock, log, { create: false })
        for (const r of listRoles(deps, { per_page: 100 }).items)
          io.out(
            `${r.id}\t${printable(r.name)}\t${r.key_count} key(s)\t${r.permissions.includes('*') ? 'every permission' : `${r.permissions.length} permission(s)`}`,
          )
        return 0
      }
      case 'admin': {
        if (sub !== 'create' && sub !== 'reset-password' && sub !== 'list')
          throw new UsageError(`unknown admin command "${sub ?? ''}"; use admin create, admin reset-password or admin list`)
        if (rest.length) throw new UsageError(`unexpected argument "${rest[0]}"`)
        if (values.password !== undefined)
          throw new UsageError(
            'passwords are never taken from the command line (the process list and shell history show them); pipe it on stdin or type it at the prompt',
          )
        if (sub !== 'list' && !values.email) throw new UsageError(`admin ${sub} needs --email E`)
        return await adminCommand(openStore(config, io.clock, log, { create: false }), sub, values, io)
      }
      case 'backup': {
        if (!sub || rest.length) throw new UsageError('backup takes one PATH')
        const target = resolve(sub)
        if (existsSync(target)) throw new UsageError(`${target} already exists; choose a new path`)
        const deps = openStore(config, io.clock, log, { create: false })
        backupDatabase(deps.db, target)
        io.out(`Backup written to ${target}`)
        return 0
      }
      case 'doctor': {
        if (sub) throw new UsageError('doctor takes no arguments')
        return await doctorCommand(openStore(config, io.clock, log, { create: false }), io)
      }
      case 'secrets': {
        if (sub !== 'rotate-key' || rest.length) throw new UsageError(`unknown secrets command "${[sub ?? '', ...rest].join(' ')}"; use secrets rotate-key`)
        return rotateKey(config, io, log)
      }
      default:
        throw new UsageError(`unknown command "${command}"`)
    }
  } catch (e) {
    if (e instanceof UsageError) return (io.err(`mailroom: ${e.message}. See mailroom --help.`), 2)
    if (e instanceof StopError) return (io.err(`mailroom: ${e.message}`), 1)
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
        io.out(
          `${k.id}\t${k.prefix}\t${printable(k.name)}\t${printable(k.role.name)}\t${k.status}\t${k.rate_limit ?? 'unlimited'}/min\tlast used ${k.last_used_at ?? 'never'}`,
        )
    }
    return 0
  }
  if (!values.role || !values.name) throw new UsageError('keys create needs --role NAME and --name LABEL')
  if (printable(values.name) !== values.name) throw new UsageError('--name must not contain control characters')
  const role = findRoleByName(deps, values.role)
  if (!role) throw new UsageError(`no role named "${printable(values.role)}"; mailroom roles list shows them`)
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
  io.out(`Created API key ${created.view.id} "${created.view.name}" with role ${printable(role.name)}. This is the only time the key is shown:`)
  io.out(created.key)
  return 0
}

/** `doctor`: runs the deliverability checks (issue 17), stores them as the server's last run, and prints each with its fix. */
async function doctorCommand(deps: Deps, io: CliEnv): Promise<number> {
  try {
    const { report } = await runAndRecordDoctor(deps, { onListedIp: (ip, evidence) => pauseForListedIp(deps, ip, evidence) })
    for (const c of report.checks) {
      io.out(`${c.status.toUpperCase().padEnd(7)} ${printable(c.id)}  ${c.title}`)
      if (c.status !== 'pass') io.out(`        ${printable(c.detail)}`)
      if (c.fix) io.out(`        fix: ${printable(c.fix)}`)
    }
    io.out(doctorSummaryLine(report))
    return report.summary.fail ? 1 : 0
  } finally {
    deps.db.$client.close()
  }
}

/** Reads a password through the host's reader and checks it, as the API's schema would. */
async function readPassword(io: CliEnv, prompt: string): Promise<string> {
  if (!io.readPassword) throw new StopError('no way to read a password here')
  let password: string
  try {
    password = await io.readPassword(prompt)
  } catch (e) {
    throw new StopError((e as Error).message)
  }
  if (password === '') throw new StopError('no password given: pipe it on stdin (one line) or type it at the prompt')
  const problem = passwordProblem(password)
  if (problem) throw new StopError(`the password ${problem}`)
  return password
}

/** `admin create | reset-password | list`: console administrators from the command line (issue 14). */
async function adminCommand(deps: Deps, sub: 'create' | 'reset-password' | 'list', values: ReturnType<typeof parse>['values'], io: CliEnv): Promise<number> {
  const audit = (action: string, id: number, status: number) =>
    recordActivity(deps, {
      actor_key_id: null,
      actor_name: CLI_ACTOR.name,
      action,
      target_type: 'admins',
      target_id: String(id),
      method: null,
      path: null,
      ip: null,
      status,
      outcome: 'success',
    })
  try {
    if (sub === 'list') {
      for (let page = 1, last = 1; page <= last; page++) {
        const result = listAdmins(deps, { page, per_page: 100 })
        last = result.meta.last_page
        for (const a of result.items)
          io.out(`${a.id}\t${printable(a.email)}\t${printable(a.role.name)}\t${a.status}\tlast sign-in ${a.last_sign_in_at ?? 'never'}`)
      }
      return 0
    }
    const email = values.email!
    if (sub === 'create') {
      const roleName = values.role ?? ADMINISTRATOR
      const role = findRoleByName(deps, roleName)
      if (!role) throw new UsageError(`no role named "${printable(roleName)}"; mailroom roles list shows them`)
      const check = checkEmail(email)
      if (!check.ok) throw new UsageError(`--email ${check.error}`)
      if (findAdminByEmail(deps, check.email)) throw new StopError(`an administrator with the email ${check.email} already exists; use admin reset-password`)
      const password = await readPassword(io, `Password for ${check.email}`)
      const admin = await createAdmin(deps, CLI_ACTOR, { email: check.email, password, role_id: role.id })
      audit('admins.create', admin.id, 201)
      io.out(`Created administrator ${admin.id} ${admin.email} with role ${printable(role.name)}. Sign in at ${deps.config.public_url}/admin`)
      return 0
    }
    if (!findAdminByEmail(deps, email)) throw new StopError(`no administrator with the email ${printable(email.trim())}; mailroom admin list shows them`)
    const password = await readPassword(io, `New password for ${email.trim()}`)
    const admin = await resetAdminPassword(deps, email, password)
    audit('admins.update', admin.id, 200)
    io.out(`Password of ${admin.email} changed; their console sessions have ended.`)
    return 0
  } catch (e) {
    const details = (e as { details?: Record<string, string[]> }).details
    if (details)
      throw new StopError(
        Object.entries(details)
          .map(([field, messages]) => `${field} ${messages.join(', ')}`)
          .join('; '),
      )
    throw e
  } finally {
    deps.db.$client.close()
  }
}

/**
 * Runs `secrets rotate-key`: a new key is written beside the key file as `<file>.new` (0600,
 * flushed) before anything changes, every stored secret is sealed under it in one
 * transaction, the old key is copied to `<file>.old`, and only then does `<file>.new` replace
 * `<file>`. A crash at any step leaves every secret under a key the next start still finds
 * (loadKeyRing reads all three), and that start finishes the job.
 */
function rotateKey(config: Config, io: CliEnv, log: ReturnType<typeof createLogger>): number {
  if (config.secret_key)
    throw new StopError(
      'the key comes from secret_key (MAILROOM_SECRET_KEY); rotate-key rotates a key file: write the key to a file, set secret_key_file to it instead, and run rotate-key again',
    )
  const deps = openStore(config, io.clock, log, { create: false })
  try {
    const path = resolve(config.secret_key_file)
    const ring = loadKeyRing(path, false)
    const next = generateSecretKey()
    writeKeyFile(`${path}.new`, next)
    const box = createSecretBox(next, [ring.primary, ...ring.older])
    const count = sealStoredSecrets(deps, box)
    writeKeyFile(`${path}.old`, ring.primary)
    writeKeyFile(path, next)
    rmSync(`${path}.new`)
    io.out(`Sealed ${count} stored secret(s) under the new key ${box.keyId} (was ${deps.secrets.keyId}), now in ${path}.`)
    io.out(`The old key is kept in ${path}.old: backups made before now need it. Delete it when they are gone.`)
    return 0
  } finally {
    deps.db.$client.close()
  }
}

/** The command line that runs `args` the way this process was started, with the data directory when it is not the default. */
function commandHint(io: CliEnv, config: Config, args: string): string {
  const dir = config.data_dir === defaultOf(SETTINGS[0]) ? '' : ` --data-dir ${resolve(config.data_dir)}`
  return `${io.program ?? 'mailroom'} ${args}${dir}`
}

async function serve(deps: Deps, log: ReturnType<typeof createLogger>, io: CliEnv): Promise<number> {
  // Loud, on stderr and in the log: DNS records and bridge hosts are built from this name (issue 13 item 17).
  const hostWarning = publicHostNameWarning(deps.config.hostname)
  if (hostWarning) (log.warn('no public host name', { hostname: deps.config.hostname }), io.err(`mailroom: WARNING: ${hostWarning}`))
  const { app, usage, imports } = buildApp(deps)
  const textPool = createTextPool(log)
  deps.textPool = textPool

  // Imports that were queued or under way when the server last stopped go on from their last committed batch.
  imports.kick()
  const checkpoints = startCheckpointer(join(deps.config.data_dir, 'mailroom.db'), log)
  // Recipients left mid-delivery by the last process go back in the queue, then delivery starts.
  const delivery = startDelivery(deps)

  // Every listener is bound before anything is announced: an address in use stops the start
  // with one line, and nobody (a load balancer polling /ready included) sees a server that is
  // about to exit. HTTP is bound last, so /health and /ready answer only once all are up.
  let submission: SubmissionListener | null = null
  let inbound: Awaited<ReturnType<typeof startInboundListener>> | null = null
  try {
    // Submission for bridges (smtp_listen STARTTLS, smtp_tls_listen implicit TLS).
    if (deps.config.smtp_listen || deps.config.smtp_tls_listen) submission = await startSubmissionListener(deps)
    // Inbound bounces, complaints and DMARC reports (mx_listen, off by default), with STARTTLS on the listeners' certificate.
    if (deps.config.mx_listen) inbound = await startInboundListener(deps, { tls: await loadSmtpCertificate(deps) })
    const { host, port } = deps.config.http_listen
    try {
      // reusePort off (Elysia turns SO_REUSEPORT on): a second server on a port in use must fail,
      // not silently share the port's connections. Development mode (detailed error pages,
      // hot reload of the console) only when running from source, where Bun bundles the console.
      app.listen({
        hostname: host,
        port,
        maxRequestBodySize: SERVER_BODY_CAP,
        reusePort: false,
        development: Object.keys(consoleDevRoutes()).length > 0,
        idleTimeout: HTTP_IDLE_TIMEOUT_S,
      })
    } catch (e) {
      throw new Error(`cannot listen for HTTP on ${host}:${port}: ${(e as Error).message}`)
    }
  } catch (e) {
    io.err(`mailroom: ${(e as Error).message}`)
    if (app.server) await app.stop()
    await submission?.close()
    await inbound?.close()
    await delivery.stop()
    await imports.stop()
    await textPool.close()
    await checkpoints.stop()
    deps.db.$client.close()
    return 1
  }

  const { host } = deps.config.http_listen
  const at = (h: string, p: number) => `${h.includes(':') ? `[${h}]` : h}:${p}`
  const url = `http://${at(host, app.server!.port!)}`
  log.info('listening', { url, version: VERSION, data_dir: resolve(deps.config.data_dir) })
  io.out(`Mailroom ${VERSION} listening on ${url} (data in ${resolve(deps.config.data_dir)})`)
  if (submission?.port != null) io.out(`SMTP submission listening on ${at(deps.config.smtp_listen!.host, submission.port)} (STARTTLS)`)
  if (submission?.tlsPort != null) io.out(`SMTP submission listening on ${at(deps.config.smtp_tls_listen!.host, submission.tlsPort)} (implicit TLS)`)
  if (countAdmins(deps) === 0) {
    // A new link at each start while nobody has set the console up; the token is in the
    // fragment, which browsers never send, so it stays out of access logs and proxies.
    const { token } = issueSetupToken(deps)
    io.out(
      `No administrator yet. Open this link within 1 hour to create the first one (or run ${commandHint(io, deps.config, 'admin create --email YOU')}):\n  ${url}/admin/setup#token=${token}`,
    )
  }
  if (countLiveKeys(deps) === 0)
    io.out(`No API keys yet. Create the first one with:\n  ${commandHint(io, deps.config, 'keys create --role Administrator --name admin')}`)

  const feedbackLoops = startFeedbackLoopPoller(deps)
  // Background jobs of issue 6 (webhook dispatch, statistics rollups): start here, stop below
  const webhooks = startWebhooks(deps)
  const statsRollup = startStatsRollup(deps)
  // Broadcasts (issue 15): scheduled, preparing and sending ones go on from their committed rows.
  const broadcasts = startBroadcasts(deps)
  // Deliverability doctor (issue 17): at start (one summary line in the log) and daily, in the background
  const doctor = startDoctor(deps, { onListedIp: (ip, evidence) => pauseForListedIp(deps, ip, evidence) })
  // Drips and triggers (issue 16): polls the wake-up table and the event log
  const automations = createAutomationRunner(deps)
  automations.start()

  const flusher = setInterval(() => {
    usage.flushGrouped().catch((e) => log.error('could not record key usage', { error: (e as Error).message }))
  }, 1000)

  const signal = await io.stopSignal
  log.info('stopping', { signal })
  clearInterval(flusher)
  await app.stop()
  await submission?.close()
  await inbound?.close()
  await feedbackLoops.stop()
  await broadcasts.stop()
  await statsRollup.stop()
  await doctor.stop()
  await automations.stop()
  await webhooks.stop()
  await delivery.stop()
  await imports.stop()
  await textPool.close()
  // Segment count worker threads (started on the first large count), before the last checkpoint
  await stopSegmentCountPool(deps)
  usage.flush()
  await checkpoints.stop()
  deps.db.$client.close()
  io.out('Mailroom stopped.')
  return 0
}
