import { t, type Static, type TSchema } from 'elysia'
import { FEEDBACK_LOOP_KINDS } from '../../db/schema'
import { enumOf, NameString, Timestamps } from '../../http/schemas'

/** The shortest allowed poll interval: providers send reports in batches; faster polling only loads their servers. */
export const MIN_POLL_SECONDS = 60

const nullable = <T extends TSchema>(s: T) => t.Union([s, t.Null()])

export const FeedbackLoopSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  kind: enumOf(FEEDBACK_LOOP_KINDS),
  address: nullable(t.String({ description: 'kind address: the address on the inbound listener that receives the reports.' })),
  host: nullable(t.String({ description: 'kind imap: IMAP server.' })),
  port: nullable(t.Integer()),
  tls: nullable(t.Boolean({ description: 'Implicit TLS (port 993); false connects in plain text and upgrades with STARTTLS when offered.' })),
  username: nullable(t.String()),
  password_set: t.Boolean({ description: 'The password is write-only; this says whether one is stored.' }),
  mailbox: nullable(t.String()),
  poll_interval_seconds: nullable(t.Integer()),
  active: t.Boolean(),
  last_polled_at: nullable(t.String({ format: 'date-time' })),
  last_error: nullable(t.String({ description: 'Why the last poll failed; null after a clean poll.' })),
  ...Timestamps,
})
export type FeedbackLoopView = Static<typeof FeedbackLoopSchema>

const Fields = {
  name: NameString(),
  address: t.Optional(nullable(t.String({ maxLength: 320, description: "kind address: at this server's host name or a return-path host." }))),
  host: t.Optional(nullable(t.String({ maxLength: 253 }))),
  port: t.Optional(nullable(t.Integer({ minimum: 1, maximum: 65535, description: 'Default 993 with tls, 143 without.' }))),
  tls: t.Optional(nullable(t.Boolean({ description: 'Default true.' }))),
  username: t.Optional(nullable(t.String({ minLength: 1, maxLength: 320 }))),
  password: t.Optional(nullable(t.String({ minLength: 1, maxLength: 1000, description: 'Write-only.' }))),
  mailbox: t.Optional(nullable(t.String({ minLength: 1, maxLength: 500, description: 'Default INBOX.' }))),
  poll_interval_seconds: t.Optional(nullable(t.Integer({ minimum: MIN_POLL_SECONDS, maximum: 86_400, description: 'Default 300.' }))),
  active: t.Optional(t.Boolean()),
}

export const CreateFeedbackLoopBody = t.Object({ ...Fields, kind: enumOf(FEEDBACK_LOOP_KINDS) })
export const UpdateFeedbackLoopBody = t.Partial(
  t.Object({ ...Fields, kind: enumOf(FEEDBACK_LOOP_KINDS, { description: 'Cannot change; accepted when equal.' }) }),
)
export type FeedbackLoopInput = Static<typeof UpdateFeedbackLoopBody>
