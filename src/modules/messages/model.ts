import { t } from 'elysia'
import { RECIPIENT_STATES } from '../../db/schema'
import { enumOf } from '../../http/schemas'

const Address = t.String({ minLength: 1, maxLength: 1000, description: 'An address, "ada@example.com" or "Ada Lovelace <ada@example.com>".' })
const Addresses = t.Array(Address, { maxItems: 50 })
/** Tracking choices of a send (src/modules/tracking); each defaults to the sending domain's setting. */
const Tracking = {
  track_opens: t.Optional(t.Boolean({ description: "Add an open-tracking image to the HTML; default: the sending domain's track_opens." })),
  track_clicks: t.Optional(t.Boolean({ description: "Rewrite the HTML's http(s) links to tracking redirects; default: the sending domain's track_clicks." })),
}
const ListUnsubscribe = {
  list_unsubscribe: t.Optional(
    t.Boolean({ description: 'Add List-Unsubscribe and List-Unsubscribe-Post (RFC 8058 one-click) for the one recipient; the message must have exactly one.' }),
  ),
}
const Schedule = {
  scheduled_at: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 100,
      description:
        'Send later: ISO 8601 with an offset ("2026-03-01T09:00:00Z") or "in 10 min", "in 2 hours", "tomorrow at 9am", "friday 15:30" (UTC); at most 30 days ahead. A time now or past sends at once. See "Scheduled sends" in docs/api.md.',
    }),
  ),
}
const Routing = {
  ip_pool_id: t.Optional(t.Integer({ minimum: 1, description: "IP pool to send over; default: the sending domain's pool, else the default pool." })),
  sending_node_id: t.Optional(t.Integer({ minimum: 1, description: 'Sending node (route) to use; default: the default node, else direct to MX.' })),
}

export const SimpleSendBody = t.Object({
  from: Address,
  to: Address,
  subject: t.String({ maxLength: 998 }),
  html: t.Optional(t.String()),
  text: t.Optional(t.String()),
  ...Tracking,
  ...ListUnsubscribe,
  ...Schedule,
  ...Routing,
})

export const Attachment = t.Object({
  filename: t.String({ minLength: 1, maxLength: 255 }),
  content: t.String({ description: 'The file, base64-encoded.' }),
  content_type: t.Optional(t.String({ maxLength: 255 })),
})

export const EmailSendBody = t.Object({
  from: Address,
  to: t.Array(Address, { minItems: 1, maxItems: 50 }),
  subject: t.String({ maxLength: 998 }),
  html: t.Optional(t.String()),
  text: t.Optional(t.String()),
  tags: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 256 }), { maxItems: 20 })),
  cc: t.Optional(Addresses),
  bcc: t.Optional(Addresses),
  reply_to: t.Optional(t.Union([Address, Addresses])),
  headers: t.Optional(t.Record(t.String(), t.String(), { description: 'Extra headers, name to value. Reserved names (From, Subject, Date...) are refused.' })),
  attachments: t.Optional(t.Array(Attachment, { maxItems: 20 })),
  ...Tracking,
  ...ListUnsubscribe,
  ...Schedule,
  ...Routing,
})

export const DynamicTemplateBody = t.Object({
  to: Address,
  variables: t.Optional(t.Record(t.String(), t.String(), { description: 'Variable name to value, merged into the template.' })),
  from: t.Optional(Address),
  version: t.Optional(t.Integer({ minimum: 1, description: 'Template version to use; default: the active version.' })),
  tags: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 256 }), { maxItems: 20 })),
  ...Tracking,
  ...ListUnsubscribe,
  ...Schedule,
  ...Routing,
})

const QueuedStatus = {
  status: t.Union([t.Literal('queued'), t.Literal('scheduled')], { description: '`scheduled` when scheduled_at is in the future.' }),
  scheduled_at: t.Optional(t.String({ format: 'date-time', description: 'When a scheduled send goes out; only on a scheduled send.' })),
}

export const QueuedSchema = t.Object({ id: t.String(), ...QueuedStatus })

export const EmailQueuedSchema = t.Object({
  id: t.String(),
  ...QueuedStatus,
  queued: t.Integer({ description: 'Recipients queued for delivery.' }),
  suppressed: t.Array(t.Object({ address: t.String(), reason: t.String(), scope: t.String() }), {
    description: 'Recipients a suppression stopped; they are never contacted.',
  }),
})

const State = enumOf(RECIPIENT_STATES)

/** What both the full message and a search result show first. */
const MessageHead = {
  id: t.String(),
  source: t.String(),
  from: t.String(),
  subject: t.String(),
}

export const MessageSchema = t.Object({
  ...MessageHead,
  tags: t.Array(t.String()),
  message_id_header: t.String(),
  signed: t.Boolean({ description: 'Whether the message is DKIM-signed at delivery (its domain is verified).' }),
  template_id: t.Nullable(t.Integer()),
  template_version_id: t.Nullable(t.Integer()),
  size: t.Integer(),
  status: State,
  created_at: t.String(),
  scheduled_at: t.Nullable(t.String({ description: 'When a scheduled send is (or was) due; null when sent at once.' })),
  recipients: t.Array(
    t.Object({
      address: t.String(),
      kind: t.String(),
      state: State,
      attempts: t.Integer(),
      next_attempt_at: t.Nullable(t.String()),
      last_response: t.Nullable(
        t.Object({ code: t.Nullable(t.Integer()), enhanced_code: t.Nullable(t.String()), text: t.Nullable(t.String()), rule: t.Nullable(t.String()) }),
      ),
      reason: t.Nullable(t.String({ description: 'Why the last attempt or bounce report failed: one of the bounce reasons of docs/api.md; null when sent.' })),
      mx: t.Nullable(t.String()),
      source_ip: t.Nullable(t.String()),
      tls: t.Nullable(
        t.Object(
          {
            version: t.Nullable(t.String({ description: "e.g. 'TLSv1.3'" })),
            cipher: t.Nullable(t.String()),
            verified: t.Boolean({ description: 'The certificate chains to a trusted root and names the MX host.' }),
            verify_error: t.Nullable(t.String({ description: 'Why it did not verify, e.g. DEPTH_ZERO_SELF_SIGNED_CERT.' })),
          },
          { description: 'The TLS of the last attempt (STARTTLS); null when it went in plaintext or no session was opened.' },
        ),
      ),
      suppression: t.Nullable(t.Record(t.String(), t.Unknown())),
      updated_at: t.String(),
      finished_at: t.Nullable(t.String()),
    }),
  ),
  events: t.Array(
    t.Object({ id: t.Integer(), kind: t.String(), recipient: t.Nullable(t.String()), created_at: t.String(), data: t.Record(t.String(), t.Unknown()) }),
  ),
})

export const MessageIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }) })

// The console's message search (issue 14): GET /api/v2/messages and the raw download.

export const MessageSearchQuery = {
  recipient: t.Optional(t.String({ minLength: 1, maxLength: 320, description: 'A recipient address (to, cc or bcc), whatever its case.' })),
  subject: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'Text the subject contains, whatever its case.' })),
  id: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'The message id.' })),
  bridge_id: t.Optional(t.Integer({ minimum: 1, description: 'Messages that came through this bridge.' })),
  status: t.Optional(enumOf(RECIPIENT_STATES, { description: 'Messages with at least one recipient in this state.' })),
  tag: t.Optional(t.String({ minLength: 1, maxLength: 256, description: 'Messages carrying this tag (exactly as sent).' })),
  created_after: t.Optional(t.String({ format: 'date-time', description: 'Messages accepted at or after this time (ISO 8601).' })),
  created_before: t.Optional(t.String({ format: 'date-time', description: 'Messages accepted before this time (ISO 8601).' })),
  after: t.Optional(
    t.String({ minLength: 1, maxLength: 64, description: 'Cursor: the messages after (older than) this message id; instead of page. Not with before.' }),
  ),
  before: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'Cursor: the messages before (newer than) this message id; instead of page.' })),
}

export const RescheduleBody = t.Object({
  scheduled_at: t.String({ minLength: 1, maxLength: 100, description: 'The new time, in any form a send accepts; now or past: send at once.' }),
})

export const MessageSummarySchema = t.Object({
  ...MessageHead,
  bridge_id: t.Nullable(t.Integer()),
  size: t.Integer(),
  status: State,
  recipients: t.Array(t.Object({ address: t.String(), state: State }), { description: 'Every recipient with its state.' }),
  created_at: t.String({ format: 'date-time' }),
})
export type MessageSummary = typeof MessageSummarySchema.static

export const MessageHeaderSchema = t.Object({
  name: t.String({ description: 'The field name as written.' }),
  value: t.String({ description: 'The value unfolded, encoded words (RFC 2047) decoded.' }),
})
export type MessageHeader = typeof MessageHeaderSchema.static
