import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { invalidField } from '../../lib/errors'
import { emitStatusChange } from '../contacts/writer'
import { emit } from '../events/service'
import type { CheckedMessage } from '../messages/compose'
import { rewriteHtml, type HtmlTracking } from './rewrite'
import { signToken, type TrackingToken } from './tokens'

/**
 * Open and click tracking and one-click unsubscribe for API sends.
 *
 * At acceptance the message's HTML is rewritten (rewrite.ts) and, when asked, the RFC 8058
 * List-Unsubscribe headers are added; the links carry signed tokens (tokens.ts) that name the
 * message. Following them writes `message.opened`, `message.clicked` and
 * `message.unsubscribed` events through the group committer (deps.commits), so the answer
 * (image, redirect, page) comes after the event is on disk.
 *
 * Attribution: one message is one MIME text for all its recipients, so a link cannot tell
 * which of several recipients followed it. Events of a message with one recipient name that
 * recipient; those of a message with several name none (recipient null), as Resend and
 * Postmark report them per message. Broadcasts send one message per contact.
 */

export interface TrackingChoice {
  opens: boolean
  clicks: boolean
  /** Add List-Unsubscribe and List-Unsubscribe-Post (RFC 8058) pointing at /t/u/{token}. */
  unsubscribe: boolean
}

/** Where the links point: the public URL of this server. */
const linkBase = (deps: Pick<Deps, 'config'>) => deps.config.public_url

export const trackingPaths = { open: '/t/o/', click: '/t/c/', unsubscribe: '/t/u/' } as const

export function trackingUrl(deps: Pick<Deps, 'db' | 'clock' | 'config' | 'secrets'>, token: TrackingToken): string {
  return `${linkBase(deps)}${trackingPaths[token.kind]}${signToken(deps, token)}`
}

/** The request's choice where it made one; else on when the bridge or the verified sending domain turns it on. */
export function trackingChoice(
  requested: { track_opens?: boolean; track_clicks?: boolean; list_unsubscribe?: boolean },
  defaults: Array<{ track_opens: boolean | number; track_clicks: boolean | number } | null | undefined>,
): TrackingChoice {
  return {
    opens: requested.track_opens ?? defaults.some((d) => !!d?.track_opens),
    clicks: requested.track_clicks ?? defaults.some((d) => !!d?.track_clicks),
    unsubscribe: requested.list_unsubscribe ?? false,
  }
}

/** The pixel and link builders of rewriteHtml for one message; null when neither opens nor clicks are tracked. */
export function htmlTrackingFor(
  deps: Pick<Deps, 'db' | 'clock' | 'config' | 'secrets'>,
  messageId: string,
  choice: Pick<TrackingChoice, 'opens' | 'clicks'>,
): HtmlTracking | null {
  if (!choice.opens && !choice.clicks) return null
  return {
    pixelUrl: choice.opens ? trackingUrl(deps, { kind: 'open', messageId, value: '' }) : undefined,
    clickUrl: choice.clicks ? (target) => trackingUrl(deps, { kind: 'click', messageId, value: target }) : undefined,
  }
}

/**
 * Applies the tracking choice to a checked message before its MIME is built: the HTML part is
 * rewritten (the text part is left as written) and the unsubscribe headers added. Refuses a
 * one-click unsubscribe for a message with several recipients (it could not say whom to
 * unsubscribe) or one whose caller already set List-Unsubscribe.
 */
export function applyTracking(deps: Pick<Deps, 'db' | 'clock' | 'config' | 'secrets'>, m: CheckedMessage, messageId: string, choice: TrackingChoice): void {
  if (choice.unsubscribe) {
    if (m.recipients.length !== 1)
      throw invalidField('list_unsubscribe', 'needs a message with exactly one recipient (to, cc and bcc together): the link unsubscribes that address')
    if (m.headers.some(([name]) => /^list-unsubscribe(-post)?$/i.test(name))) {
      throw invalidField('list_unsubscribe', 'cannot be combined with a List-Unsubscribe or List-Unsubscribe-Post header of your own')
    }
    const url = trackingUrl(deps, { kind: 'unsubscribe', messageId, value: m.recipients[0]!.address })
    // RFC 8058 section 3.1: an HTTPS URI in List-Unsubscribe and exactly this List-Unsubscribe-Post value.
    m.headers.push(['List-Unsubscribe', `<${url}>`], ['List-Unsubscribe-Post', 'List-Unsubscribe=One-Click'])
  }
  const html = htmlTrackingFor(deps, messageId, choice)
  if (m.html && html) m.html = rewriteHtml(m.html, html).html
}

/** What the HTTP request told about the reader, kept in the event as Resend does. */
export interface ClientInfo {
  ip: string | null
  user_agent: string | null
}

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    message: c.prepare<{ id: string; bridge_id: number | null; from_address: string }, [string]>(
      'SELECT id, bridge_id, from_address FROM messages WHERE id = ?',
    ),
    recipients: c.prepare<{ address: string }, [string]>('SELECT address FROM message_recipients WHERE message_id = ? ORDER BY id LIMIT 2'),
    seen: c.prepare<{ one: number }, [string, string]>('SELECT 1 AS one FROM events WHERE message_id = ? AND kind = ? LIMIT 1'),
    seenFor: c.prepare<{ one: number }, [string, string, string]>('SELECT 1 AS one FROM events WHERE message_id = ? AND kind = ? AND recipient = ? LIMIT 1'),
    // Contacts are unique per (list, email) and have no index on the address alone (decision
    // 17); naming every list makes this one index lookup per list instead of a table scan.
    contactsByEmail: c.prepare<{ id: number; list_id: number; status: string }, [string]>(
      'SELECT id, list_id, status FROM contacts WHERE list_id IN (SELECT id FROM lists) AND email = ?',
    ),
    unsubscribeContact: c.prepare<never, [number, number]>("UPDATE contacts SET status = 'unsubscribed', updated_at = ? WHERE id = ?"),
  }
})

/** The single recipient of a message, or null when it has several (see the attribution note above). */
function soleRecipient(db: Db, messageId: string): string | null {
  const rows = statements(db).recipients.all(messageId)
  return rows.length === 1 ? rows[0]!.address : null
}

/**
 * Records an open or a click of a message. `first` tells whether it is the first of its kind
 * for the message, which the statistics count as the unique opens and clicks the rates are
 * made of. Nothing is recorded for a message that no longer exists. Resolves after the commit.
 */
export async function recordEngagement(deps: Deps, token: TrackingToken, client: ClientInfo): Promise<boolean> {
  const kind = token.kind === 'click' ? 'message.clicked' : 'message.opened'
  return deps.commits.run(() => {
    const st = statements(deps.db)
    const message = st.message.get(token.messageId)
    if (!message) return false
    const first = !st.seen.get(message.id, kind)
    emit(deps.db, deps.clock.now(), {
      kind,
      message_id: message.id,
      recipient: soleRecipient(deps.db, message.id),
      bridge_id: message.bridge_id,
      data: { ...(token.kind === 'click' && { url: token.value }), first, ...client },
    })
    return true
  })
}

export interface UnsubscribeResult {
  address: string
  /** False when this address had already unsubscribed through this message. */
  changed: boolean
  /** Contacts whose status became `unsubscribed`. */
  contacts: number
}

/**
 * One-click unsubscribe (RFC 8058) of the address a message was sent to: a
 * `message.unsubscribed` event, and every contact with that address that is subscribed or
 * unconfirmed, on any list, becomes unsubscribed (with its `contact.unsubscribed` event), so
 * broadcasts skip it. Transactional sends to the address are not blocked; that is a
 * suppression's job. Repeating it changes nothing.
 */
export async function unsubscribeRecipient(deps: Deps, token: TrackingToken, method: 'one_click' | 'page', client: ClientInfo): Promise<UnsubscribeResult> {
  const address = token.value
  return deps.commits.run(() => {
    const st = statements(deps.db)
    if (st.seenFor.get(token.messageId, 'message.unsubscribed', address)) return { address, changed: false, contacts: 0 }
    const now = deps.clock.now()
    const message = st.message.get(token.messageId)
    emit(deps.db, now, {
      kind: 'message.unsubscribed',
      message_id: token.messageId,
      recipient: address,
      bridge_id: message?.bridge_id ?? null,
      data: { method, ...client },
    })
    let contacts = 0
    for (const c of st.contactsByEmail.all(address)) {
      if (c.status !== 'subscribed' && c.status !== 'unconfirmed') continue
      st.unsubscribeContact.run(now, c.id)
      emitStatusChange(deps.db, now, {
        id: c.id,
        email: address,
        listId: c.list_id,
        from: c.status as 'subscribed' | 'unconfirmed',
        to: 'unsubscribed',
        actorKeyId: null,
      })
      contacts++
    }
    return { address, changed: true, contacts }
  })
}

/** The sender's domain for the unsubscribe page ("mail from example.com"), when the message is still stored. */
export function senderOf(deps: Pick<Deps, 'db'>, messageId: string): string | null {
  const from = statements(deps.db).message.get(messageId)?.from_address
  return from ? from.slice(from.lastIndexOf('@') + 1) : null
}
