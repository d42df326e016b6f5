/**
 * Peers in the delivery benchmark (issue 18): Debian's Postfix relaying into the same counting
 * sink as Mailroom, in the same run, so the ratio between them is measured rather than quoted.
 *
 * Postfix runs from a configuration and queue directory of its own under /tmp (the system's
 * /etc/postfix is neither read nor changed), listens on 127.0.0.1 only (one smtpd on a free
 * port; `inet_interfaces = 127.0.0.1`; every other inet service of Debian's master.cf is
 * dropped), relays everything to the sink (`relayhost = [127.0.0.1]:SINK`), and is stopped
 * and its directory removed afterwards, also when the run fails or is interrupted. The queue
 * keeps Postfix's defaults: every message is fsync'd to the queue before the 250.
 * `smtp-source` (from the postfix package) feeds it with 10 sessions.
 *
 * Install (Debian): `echo "postfix postfix/main_mailer_type select No configuration" |
 * debconf-set-selections && apt-get install -y postfix` ("No configuration": nothing is
 * started or configured system-wide). Without it the benchmark's row says "not installed".
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from './support/servers'

export const POSTFIX_INSTALL_HINT = `Postfix is not installed, so the Postfix row says "not installed". To include it (Debian):
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  apt-get install -y postfix
The benchmark runs it from a directory of its own under /tmp on 127.0.0.1 only and stops it afterwards.`

const BINARIES = { postfix: '/usr/sbin/postfix', smtpSource: '/usr/sbin/smtp-source', master: '/etc/postfix/master.cf' }

/** Whether Postfix and smtp-source are installed, and as root (Postfix's master must start as root). */
export function postfixAvailable(): { ok: true } | { ok: false; why: string } {
  if (!existsSync(BINARIES.postfix) || !existsSync(BINARIES.smtpSource) || !existsSync(BINARIES.master)) return { ok: false, why: 'not installed' }
  if (process.getuid?.() !== 0) return { ok: false, why: 'needs root (Postfix starts as root, then drops to the postfix user)' }
  return { ok: true }
}

/**
 * Debian's master.cf with one smtpd on 127.0.0.1:`port` instead of every inet service, and
 * no service chrooted (a chroot would need copies of /etc files inside the queue directory).
 */
export function benchMasterCf(debian: string, port: number): string {
  const out: string[] = [`127.0.0.1:${port} inet n - n - - smtpd`]
  let skipping = false
  for (const line of debian.split('\n')) {
    if (/^\s/.test(line) && line.trim() !== '') {
      if (!skipping) out.push(line)
      continue
    }
    skipping = false
    if (line.startsWith('#') || line.trim() === '') continue
    const cols = line.split(/\s+/)
    if (cols[1] === 'inet') {
      skipping = true
      continue
    }
    if (cols.length >= 8) cols[4] = 'n'
    out.push(cols.join(' '))
  }
  return out.join('\n') + '\n'
}

export interface PostfixRun {
  /** Seconds from smtp-source's first connection to the sink counting the last message. */
  s: number
  /** Seconds smtp-source took to hand every message to Postfix (250 after the queue fsync). */
  acceptS: number
}

/**
 * Relays `n` messages of about `size` bytes through a private Postfix to the sink: smtp-source
 * with 10 sessions into Postfix's smtpd, Postfix's smtp client to `[127.0.0.1]:sinkPort`.
 */
export async function runPostfix(sink: { smtpPort: number; count(): Promise<{ messages: number }> }, n: number, size: number): Promise<PostfixRun> {
  const dir = mkdtempSync('/tmp/mailroom-bench-postfix-')
  chmodSync(dir, 0o755)
  const conf = join(dir, 'conf')
  const queue = join(dir, 'queue')
  const data = join(dir, 'data')
  for (const d of [conf, queue, data]) mkdirSync(d, { mode: 0o755 })
  execFileSync('chown', ['postfix:postfix', data])
  const port = await freePort()
  writeFileSync(
    join(conf, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${queue}`,
      `data_directory = ${data}`,
      'mail_owner = postfix',
      'setgid_group = postdrop',
      // Loopback only, whatever master.cf says.
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'myhostname = postfix.bench.invalid',
      'mydestination =',
      'mynetworks = 127.0.0.0/8',
      `relayhost = [127.0.0.1]:${sink.smtpPort}`,
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      'smtpd_recipient_restrictions = permit_mynetworks, reject',
      'local_recipient_maps =',
      'alias_maps =',
      'alias_database =',
      'smtp_tls_security_level = none',
      'smtpd_tls_security_level = none',
      'smtp_dns_support_level = disabled',
      'smtpd_peername_lookup = no',
      'biff = no',
      `maillog_file = ${join(dir, 'maillog')}`,
      `maillog_file_prefixes = ${dir}`,
      // The same per-destination limit Mailroom uses (destination_concurrency 20).
      'default_destination_concurrency_limit = 20',
      'smtpd_client_connection_count_limit = 0',
      'smtpd_client_connection_rate_limit = 0',
      'smtpd_client_message_rate_limit = 0',
      '',
    ].join('\n'),
  )
  writeFileSync(join(conf, 'master.cf'), benchMasterCf(readFileSync(BINARIES.master, 'utf8'), port))
  const postfix = (cmd: string) => spawnSync(BINARIES.postfix, ['-c', conf, cmd], { encoding: 'utf8' })
  const stop = () => {
    postfix('stop')
    rmSync(dir, { recursive: true, force: true })
  }
  const onSignal = () => stop()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    const started = postfix('start')
    if (started.status !== 0) {
      const log = existsSync(join(dir, 'maillog'))
        ? readFileSync(join(dir, 'maillog'), 'utf8').slice(-2000)
        : '(no log; Postfix reports start-up failures to syslog)'
      throw new Error(`postfix start failed (exit ${started.status}): ${started.stderr}${log}`)
    }
    await waitForListener(port, 15_000)
    const before = (await sink.count()).messages
    const t0 = performance.now()
    const source = Bun.spawn(
      [BINARIES.smtpSource, '-s', '10', '-m', String(n), '-l', String(size), '-f', 'ada@bench.example', '-t', 'user@bench.example', `127.0.0.1:${port}`],
      { stdout: 'ignore', stderr: 'pipe' },
    )
    const code = await source.exited
    const acceptS = (performance.now() - t0) / 1000
    if (code !== 0) throw new Error(`smtp-source exited with ${code}: ${await new Response(source.stderr).text()}`)
    const deadline = performance.now() + 600_000
    while ((await sink.count()).messages - before < n) {
      if (performance.now() > deadline) throw new Error(`Postfix relayed ${(await sink.count()).messages - before} of ${n} messages in 10 minutes`)
      await Bun.sleep(20)
    }
    const s = (performance.now() - t0) / 1000
    const relayed = (await sink.count()).messages - before
    if (relayed !== n) throw new Error(`the sink counted ${relayed} messages from Postfix, expected ${n}`)
    return { s, acceptS }
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    stop()
  }
}

async function waitForListener(port: number, timeoutMs: number): Promise<void> {
  const end = performance.now() + timeoutMs
  for (;;) {
    try {
      const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
      socket.end()
      return
    } catch {
      if (performance.now() > end) throw new Error(`Postfix did not listen on 127.0.0.1:${port} within ${timeoutMs / 1000} s`)
      await Bun.sleep(100)
    }
  }
}
