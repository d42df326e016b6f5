import { t, type Static, type TSchema } from 'elysia'
import { NODE_KINDS, RELAY_TLS_MODES } from '../../db/schema'
import { enumOf, NameString, Timestamps } from '../../http/schemas'

const Nullable = <T extends TSchema>(schema: T, description?: string) => t.Union([schema, t.Null()], description ? { description } : {})

export const SendingNodeSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  kind: enumOf(NODE_KINDS, { description: '`direct`: to the recipient MX over an IP pool; `relay`: through a smart host.' }),
  pool_id: Nullable(t.Integer(), 'direct: the pool to send over; null = the pool of the message.'),
  relay_host: Nullable(t.String()),
  relay_port: Nullable(t.Integer()),
  relay_tls: Nullable(enumOf(RELAY_TLS_MODES)),
  relay_username: Nullable(t.String()),
  has_password: t.Boolean({ description: 'Whether a relay password is stored; the password itself is never returned.' }),
  hourly_cap: Nullable(t.Integer(), 'Most deliveries per clock hour; null = no cap.'),
  daily_cap: Nullable(t.Integer(), 'Most deliveries per UTC day; null = no cap.'),
  is_default: t.Boolean({ description: 'The route of mail that names no node.' }),
  active: t.Boolean(),
  usage: t.Object({ this_hour: t.Integer(), today: t.Integer() }, { description: 'Deliveries counted against the caps.' }),
  ...Timestamps,
})
export type SendingNodeView = Static<typeof SendingNodeSchema>

// No control characters: these values end up in SMTP commands (AUTH) and must not carry CR/LF.
const NoControl = '^[^\\u0000-\\u001f\\u007f]*$'

export const CreateSendingNodeBody = t.Object({
  name: NameString(),
  kind: enumOf(NODE_KINDS),
  pool_id: t.Optional(Nullable(t.Integer({ minimum: 1 }), 'direct only.')),
  relay_host: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 253 }), 'relay: host name or IP address of the smart host (required).')),
  relay_port: t.Optional(Nullable(t.Integer({ minimum: 1, maximum: 65535 }), 'relay: default 587 (starttls), 465 (tls) or 25 (none).')),
  relay_tls: t.Optional(Nullable(enumOf(RELAY_TLS_MODES), 'relay: default starttls.')),
  relay_username: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 500, pattern: NoControl }))),
  relay_password: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 500, pattern: NoControl }), 'Write-only: never returned.')),
  hourly_cap: t.Optional(Nullable(t.Integer({ minimum: 1 }))),
  daily_cap: t.Optional(Nullable(t.Integer({ minimum: 1 }))),
  is_default: t.Optional(t.Boolean({ description: 'Make this the default route (the previous default stops being one).' })),
  active: t.Optional(t.Boolean({ description: 'Default true.' })),
})
export type SendingNodeInput = Static<typeof CreateSendingNodeBody>
export const UpdateSendingNodeBody = t.Partial(CreateSendingNodeBody)
