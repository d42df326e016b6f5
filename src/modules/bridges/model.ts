import { t, type Static, type TSchema } from 'elysia'
import { NameString, Timestamps } from '../../http/schemas'

const Nullable = <T extends TSchema>(schema: T, description?: string) => t.Union([schema, t.Null()], description ? { description } : {})

export const BridgeCountsSchema = t.Object(
  { accepted: t.Integer(), delivered: t.Integer(), bounced: t.Integer(), complained: t.Integer() },
  { description: 'Running totals: accepted messages; delivered and bounced recipients; complaints.' },
)

export const BridgeSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  smtp_username: t.String({ description: 'The SMTP AUTH user name (not secret). The password is shown only on create and rotation.' }),
  api_key_id: Nullable(t.Integer(), "The bridge's own API key (its value is shown only on create and rotation)."),
  api_key_prefix: Nullable(t.String(), 'The non-secret start of that key, to recognise it.'),
  domains: t.Array(t.String(), { description: 'Sending domains its From (and MAIL FROM) may use.' }),
  pool_id: Nullable(t.Integer(), 'IP pool its mail leaves through; null: the usual choice (request, sending domain, default pool).'),
  node_id: Nullable(t.Integer(), 'Sending node its mail takes; null: the usual choice (request, default node).'),
  hourly_quota: Nullable(t.Integer(), 'Most accepted messages per clock hour; null: no quota.'),
  daily_quota: Nullable(t.Integer(), 'Most accepted messages per UTC day; null: no quota.'),
  allowed_ips: t.Array(t.String(), { description: 'Addresses, ranges and CIDR blocks allowed to use the bridge (SMTP and its API key); empty: any.' }),
  track_opens: t.Boolean(),
  track_clicks: t.Boolean(),
  active: t.Boolean({ description: 'An inactive bridge refuses SMTP AUTH and sends (403).' }),
  send_dsn: t.Boolean({
    description: 'Mail submitted over SMTP that bounces or expires gets a delivery status notification (RFC 3464) to its envelope sender.',
  }),
  counts: BridgeCountsSchema,
  usage: t.Object({ this_hour: t.Integer(), today: t.Integer() }, { description: 'Messages counted against the quotas.' }),
  ...Timestamps,
})

const SmtpCredentials = t.Object(
  {
    host: t.String(),
    port: Nullable(t.Integer(), 'The submission port (STARTTLS), else the implicit-TLS port; null when both listeners are off.'),
    username: t.String(),
    password: t.String(),
    warning: t.Optional(
      t.String({
        description:
          "Present when `host` is the placeholder <public-host-name>: the server's host name is not public; give the application the server's real name.",
      }),
    ),
  },
  { description: 'SMTP submission credentials. The password is shown only in this response; store it now.' },
)
const ApiKeyValue = t.String({ description: "The bridge's API key for POST /v1/bridge/emails. Shown only in this response; store it now." })
/** Credentials in the one answer that shows them (create: both; rotate: those rotated). */
const BridgeSecretsSchema = t.Object({ smtp: t.Optional(SmtpCredentials), api_key: t.Optional(ApiKeyValue) })

export const CreatedBridgeSchema = t.Composite([BridgeSchema, t.Object({ smtp: SmtpCredentials, api_key: ApiKeyValue })])
export const RotatedBridgeSchema = t.Composite([BridgeSchema, BridgeSecretsSchema])

const Quota = (per: string) => t.Optional(Nullable(t.Integer({ minimum: 1, maximum: 100_000_000 }), `Most accepted messages per ${per}; null: no quota.`))

const BridgeFields = {
  name: NameString(),
  domains: t.Array(t.String({ minLength: 1, maxLength: 253 }), {
    minItems: 1,
    maxItems: 100,
    description: 'Sending domains (they must exist under /api/v2/sending-domains) the From address may use.',
  }),
  pool_id: t.Optional(Nullable(t.Integer({ minimum: 1 }), "IP pool for all the bridge's mail; it wins over a request's ip_pool_id.")),
  node_id: t.Optional(Nullable(t.Integer({ minimum: 1 }), "Sending node for all the bridge's mail; it wins over a request's sending_node_id.")),
  hourly_quota: Quota('clock hour'),
  daily_quota: Quota('UTC day'),
  allowed_ips: t.Optional(
    t.Array(t.String({ maxLength: 100 }), {
      maxItems: 500,
      description: 'Addresses, ranges (first-last) and CIDR blocks, IPv4 or IPv6, allowed to use the bridge. Empty: any address.',
    }),
  ),
  track_opens: t.Optional(t.Boolean()),
  track_clicks: t.Optional(t.Boolean()),
  active: t.Optional(t.Boolean({ description: 'Default true.' })),
  send_dsn: t.Optional(t.Boolean({ description: 'Default true: SMTP-submitted mail that bounces or expires gets a DSN to its envelope sender.' })),
}

export const CreateBridgeBody = t.Object(BridgeFields)
export const UpdateBridgeBody = t.Partial(t.Object(BridgeFields))
export const RotateBody = t.Object({
  smtp: t.Optional(t.Boolean({ description: 'New SMTP password (default true).' })),
  api_key: t.Optional(t.Boolean({ description: 'New API key (default true).' })),
})

/** A bridge as the API shows it. */
export type BridgeView = Static<typeof BridgeSchema>
/** A bridge's running totals. */
export type BridgeCounts = Static<typeof BridgeCountsSchema>
/** What a create request gives (an update gives any part of it). */
export type BridgeInput = Static<typeof CreateBridgeBody>
/** Credentials in the one answer that shows them (create, rotate). */
export type BridgeSecrets = Static<typeof BridgeSecretsSchema>

export const BridgeTestBody = t.Object({
  to: t.String({ minLength: 3, maxLength: 320, description: 'The address to send the test message to.' }),
  from: t.Optional(
    t.String({ minLength: 3, maxLength: 500, description: 'Default `Mailroom test <mailroom-test@<first domain>>`; must be at one of its domains.' }),
  ),
  subject: t.Optional(t.String({ minLength: 1, maxLength: 500 })),
})
export const BridgeTestResultSchema = t.Object({
  id: t.String({ description: 'The queued message (GET /v1/emails/{id}, or Messages in the console).' }),
  status: t.Literal('queued'),
  from: t.String(),
  to: t.String(),
  queued: t.Integer({ description: '1, or 0 when the address is suppressed.' }),
  suppressed: t.Array(t.String(), { description: 'The address, when a suppression stopped it.' }),
})
/** What a test send request gives. */
export type BridgeTestInput = Static<typeof BridgeTestBody>
/** The answer of a test send. */
export type BridgeTestResult = Static<typeof BridgeTestResultSchema>
