import { t, type Static } from 'elysia'

export const HealthSchema = t.Object({ status: t.Literal('ok'), version: t.String() })
export const ReadySchema = t.Object({ status: t.Literal('ready') })

export const WarningSchema = t.Object({
  kind: t.String({ description: 'domain_not_verified, no_public_host_name, webhook_disabled or doctor_failed.' }),
  message: t.String(),
  href: t.String({ description: 'The console page where it is fixed.' }),
})

export const OverviewSchema = t.Object({
  queue: t.Object({
    depth: t.Integer({ description: 'Recipients queued, deferred or being sent.' }),
    queued: t.Integer(),
    deferred: t.Integer(),
    sending: t.Integer(),
    oldest_queued_at: t.Nullable(t.String({ format: 'date-time', description: 'When the oldest recipient still waiting was accepted.' })),
  }),
  warnings: t.Array(WarningSchema),
})

const Listen = t.Nullable(t.String({ description: 'HOST:PORT, or null when off.' }))

export const SettingsSchema = t.Object({
  version: t.String(),
  hostname: t.String(),
  hostname_is_public: t.Boolean(),
  public_url: t.String(),
  tracking_base_url: t.String({ description: 'Base of open and click tracking links and unsubscribe pages.' }),
  listeners: t.Object({ http: t.String(), smtp: Listen, smtp_tls: Listen, mx: Listen }),
  defaults: t.Object({
    from: t.Nullable(t.String()),
    rate_limit: t.Nullable(t.Integer({ description: 'Requests per minute of new keys; null is unlimited.' })),
    max_message_age_seconds: t.Integer(),
    delivery_concurrency: t.Integer(),
    destination_concurrency: t.Integer(),
    allow_unverified_domains: t.Boolean(),
    max_body_bytes: t.Integer(),
    smtp_max_message_bytes: t.Integer(),
  }),
  console: t.Object({ session_idle_minutes: t.Integer(), session_max_hours: t.Integer(), trust_proxy: t.Boolean() }),
  sources: t.Record(
    t.String(),
    t.Object({
      env: t.String({ description: 'The environment variable that sets it, e.g. MAILROOM_HOSTNAME.' }),
      flag: t.String({ description: 'The command-line flag that sets it, e.g. --hostname.' }),
      description: t.String(),
    }),
    {
      description:
        'How each field above is changed, keyed by its path ("hostname", "listeners.smtp", "defaults.rate_limit"): settings are read at start, so a change needs a restart.',
    },
  ),
})

export type WarningView = Static<typeof WarningSchema>
export type OverviewView = Static<typeof OverviewSchema>
export type SettingsView = Static<typeof SettingsSchema>
