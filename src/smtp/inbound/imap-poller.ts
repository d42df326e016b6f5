/**
 * Polls the IMAP mailboxes of feedback-loop accounts (kind `imap`) on their schedules, with
 * imapflow, and feeds each unseen message through the same processing as the inbound
 * listener (./apply.ts).
 *
 * A message is flagged \Seen (RFC 9051 section 2.3.2) after its outcome is committed, and
 * left where it is: moving needs a target mailbox the operator would have to create, and
 * \Seen is what "already read" means to every client looking at the same mailbox. If the flag
 * cannot be set (connection lost right after the commit), the next poll reads the message
 * again; that is harmless, because every outcome is idempotent (a DMARC report is a duplicate
 * of (org, report id), a bounce of an already bounced recipient changes nothing, a complaint
 * is recorded once per message and recipient).
 */
import type { Deps } from '../../deps'
import { dueImapAccounts, recordPoll, type ImapAccount } from '../../modules/feedback-loops/service'
import { serverSecret } from '../../modules/system/secrets'
import { processInbound } from './apply'

/** Most messages read per account and poll: a large backlog is worked through over several polls. */
export const MAX_MESSAGES_PER_POLL = 200
/** How often the poller looks for due accounts (each account has its own interval, at least 60 s). */
const TICK_MS = 15_000

export interface PollResult {
  account_id: number
  processed: number
  error: string | null
}

export interface PollerOptions {
  /** Connection options for tests (imapflow's `tls` block, e.g. a CA); merged into each connection. */
  tls?: Record<string, unknown>
  /** Milliseconds for connecting and for each command; default 30 s. */
  timeoutMs?: number
}

/** Polls one account once: reads unseen messages, processes them, flags them \Seen. */
export async function pollImapAccount(deps: Deps, account: ImapAccount, options: PollerOptions = {}): Promise<PollResult> {
  const secret = serverSecret(deps, 'return-path')
  const timeout = options.timeoutMs ?? 30_000
  // Loaded with the first poll, not with the server: imapflow is about 12 MiB that a server without IMAP accounts does not need (issue 18).
  const { ImapFlow } = await import('imapflow')
  const client = new ImapFlow({
    host: account.host,
    port: account.port,
    secure: account.tls,
    auth: { user: account.username, pass: account.password },
    logger: false,
    disableAutoIdle: true,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    ...(options.tls ? { tls: options.tls } : {}),
  })
  // imapflow also reports socket trouble as an 'error' event; the awaited command fails with it.
  client.on('error', () => {})
  let processed = 0
  let error: string | null = null
  try {
    await client.connect()
    const lock = await client.getMailboxLock(account.mailbox)
    try {
      const uids = (await client.search({ seen: false }, { uid: true })) || []
      for (const uid of uids.slice(0, MAX_MESSAGES_PER_POLL)) {
        const message = await client.fetchOne(String(uid), { source: true }, { uid: true })
        if (!message || !message.source) continue
        // No SMTP envelope here: the parsers find the token in the report itself.
        await processInbound(
          deps,
          { raw: message.source, envelope: { mailFrom: '', rcptTo: [] }, remoteIp: null, source: { kind: 'imap', account_id: account.id } },
          { secret },
        )
        await client.messageFlagsAdd(String(uid), ['\\Seen'], { uid: true })
        processed++
      }
    } finally {
      lock.release()
    }
    await client.logout()
  } catch (e) {
    error = e instanceof Error ? [e.message, (e as { responseText?: string }).responseText].filter(Boolean).join(': ') : String(e)
    client.close()
  }
  recordPoll(deps, account.id, deps.clock.now(), error)
  if (error) deps.log.warn('feedback-loop mailbox poll failed', { account_id: account.id, host: account.host, error, processed })
  else if (processed > 0) deps.log.info('feedback-loop mailbox polled', { account_id: account.id, processed })
  return { account_id: account.id, processed, error }
}

/** Polls every account that is due at the clock's time, one after the other. */
export async function pollDueAccounts(deps: Deps, options: PollerOptions = {}, shouldStop: () => boolean = () => false): Promise<PollResult[]> {
  const results: PollResult[] = []
  for (const account of dueImapAccounts(deps, deps.clock.now())) {
    if (shouldStop()) break
    results.push(await pollImapAccount(deps, account, options))
  }
  return results
}

/** The in-process poller started by `serve`: every tick, polls the accounts that are due; one pass at a time. */
export function startFeedbackLoopPoller(deps: Deps, options: PollerOptions = {}) {
  let running: Promise<unknown> | null = null
  let stopped = false
  const tick = () => {
    if (running || stopped) return
    running = pollDueAccounts(deps, options, () => stopped)
      .catch((e) => deps.log.error('feedback-loop poller failed', { error: e instanceof Error ? e.message : String(e) }))
      .finally(() => (running = null))
  }
  const first = setTimeout(tick, 0)
  const timer = setInterval(tick, TICK_MS)
  return {
    /** Stops scheduling and waits for a poll under way. */
    async stop() {
      stopped = true
      clearTimeout(first)
      clearInterval(timer)
      await running
    },
  }
}
