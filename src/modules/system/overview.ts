import { isNotNull, ne } from 'drizzle-orm'
import { SETTINGS } from '../../config'
import type { Deps } from '../../deps'
import { sendingDomains, webhooks } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { publicHostNameProblem, publicHostNameWarning } from '../../lib/public-host-name'
import { VERSION } from '../../version'
import { lastDoctorReport } from '../doctor/service'
import type { OverviewView, SettingsView, WarningView } from './model'

type Warning = WarningView

/** Warnings of one kind shown one by one up to here, then as one line with the count. */
const LIST_LIMIT = 10

/**
 * The dashboard's state of the server: the delivery queue (through the partial indexes on
 * due and leased rows, so it costs the queue's size, not the history's) and what needs an
 * operator (issue 14): unverified sending domains, no public host name, disabled webhooks.
 */
export function systemOverview(deps: Deps): OverviewView {
  const client = deps.db.$client
  const waiting = client
    .query<{ state: string; n: number; oldest: number | null }, []>(
      `SELECT state, count(*) AS n, min(created_at) AS oldest FROM message_recipients WHERE state IN ('queued', 'deferred') GROUP BY state
       UNION ALL SELECT state, count(*), min(created_at) FROM message_recipients WHERE state = 'sending' GROUP BY state`,
    )
    .all()
  const of = (state: string) => waiting.find((w) => w.state === state)
  const oldest = waiting.reduce<number | null>((min, w) => (w.oldest !== null && (min === null || w.oldest < min) ? w.oldest : min), null)
  const queued = of('queued')?.n ?? 0
  const deferred = of('deferred')?.n ?? 0
  const sending = of('sending')?.n ?? 0

  const warnings: Warning[] = []
  const domains = deps.db
    .select({ id: sendingDomains.id, name: sendingDomains.name, status: sendingDomains.status })
    .from(sendingDomains)
    .where(ne(sendingDomains.status, 'verified'))
    .all()
  for (const d of domains.slice(0, LIST_LIMIT))
    warnings.push({
      kind: 'domain_not_verified',
      message: `The sending domain ${d.name} is not verified (${d.status}): its mail is refused or sent unsigned until its DNS records are published and checked.`,
      href: `/admin/sending/domains/${d.id}`,
    })
  if (domains.length > LIST_LIMIT)
    warnings.push({ kind: 'domain_not_verified', message: `${domains.length - LIST_LIMIT} more sending domains are not verified.`, href: '/admin/sending' })
  const hostWarning = publicHostNameWarning(deps.config.hostname)
  if (hostWarning) warnings.push({ kind: 'no_public_host_name', message: hostWarning, href: '/admin/settings' })
  const disabled = deps.db
    .select({ id: webhooks.id, url: webhooks.url, reason: webhooks.disabled_reason })
    .from(webhooks)
    .where(isNotNull(webhooks.disabled_at))
    .all()
  for (const w of disabled.slice(0, LIST_LIMIT))
    warnings.push({
      kind: 'webhook_disabled',
      message: `The webhook to ${w.url} is disabled${w.reason === 'failures' ? ' after repeated failures' : w.reason === 'gone' ? ' (the endpoint answered 410 Gone)' : ''}; events for it wait until it is re-enabled.`,
      href: `/admin/webhooks/${w.id}`,
    })
  if (disabled.length > LIST_LIMIT)
    warnings.push({ kind: 'webhook_disabled', message: `${disabled.length - LIST_LIMIT} more webhooks are disabled.`, href: '/admin/webhooks' })
  // The last deliverability doctor run (issue 17): one line naming what fails.
  const doctor = lastDoctorReport(deps)
  if (doctor?.summary.fail) {
    const failing = doctor.checks.filter((c) => c.status === 'fail')
    warnings.push({
      kind: 'doctor_failed',
      message: `${failing.length} deliverability check${failing.length === 1 ? '' : 's'} failed at the last run: ${failing
        .slice(0, 3)
        .map((c) => `${c.title}${c.subject ? ` (${c.subject})` : ''}`)
        .join('; ')}${failing.length > 3 ? '; ...' : ''}.`,
      href: '/admin/sending/deliverability',
    })
  }

  return { queue: { depth: queued + deferred + sending, queued, deferred, sending, oldest_queued_at: toIso(oldest) }, warnings }
}

const listen = (l: { host: string; port: number } | null) => (l ? `${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port}` : null)

/** The effective settings an operator looks at in the console; never a secret (keys, key files, certificates' paths stay out). */
export function systemSettings(deps: Deps): SettingsView {
  const c = deps.config
  return {
    version: VERSION,
    hostname: c.hostname,
    hostname_is_public: publicHostNameProblem(c.hostname) === null,
    public_url: c.public_url,
    tracking_base_url: c.public_url,
    listeners: { http: listen(c.http_listen)!, smtp: listen(c.smtp_listen), smtp_tls: listen(c.smtp_tls_listen), mx: listen(c.mx_listen) },
    defaults: {
      from: c.default_from || null,
      rate_limit: c.default_rate_limit,
      max_message_age_seconds: c.max_message_age_seconds,
      delivery_concurrency: c.delivery_concurrency,
      destination_concurrency: c.destination_concurrency,
      allow_unverified_domains: c.allow_unverified_domains,
      max_body_bytes: c.max_body_bytes,
      smtp_max_message_bytes: c.smtp_max_message_bytes,
    },
    console: { session_idle_minutes: c.admin_session_idle_minutes, session_max_hours: c.admin_session_max_hours, trust_proxy: c.trust_proxy },
    sources: SETTING_SOURCES,
  }
}

/** Which configuration setting each field of the settings answer shows (its path -> the config key). */
const FIELD_SETTINGS: Record<string, string> = {
  hostname: 'hostname',
  public_url: 'public_url',
  tracking_base_url: 'public_url',
  'listeners.http': 'http_listen',
  'listeners.smtp': 'smtp_listen',
  'listeners.smtp_tls': 'smtp_tls_listen',
  'listeners.mx': 'mx_listen',
  'defaults.from': 'default_from',
  'defaults.rate_limit': 'default_rate_limit',
  'defaults.max_message_age_seconds': 'max_message_age_seconds',
  'defaults.delivery_concurrency': 'delivery_concurrency',
  'defaults.destination_concurrency': 'destination_concurrency',
  'defaults.allow_unverified_domains': 'allow_unverified_domains',
  'defaults.max_body_bytes': 'max_body_bytes',
  'defaults.smtp_max_message_bytes': 'smtp_max_message_bytes',
  'console.session_idle_minutes': 'admin_session_idle_minutes',
  'console.session_max_hours': 'admin_session_max_hours',
  'console.trust_proxy': 'trust_proxy',
}

/** The environment variable and flag of every field shown, so the console can tell an operator how to change it. */
const SETTING_SOURCES: SettingsView['sources'] = Object.fromEntries(
  Object.entries(FIELD_SETTINGS).map(([field, key]) => {
    const s = SETTINGS.find((x) => x.key === key)
    if (!s) throw new Error(`no setting ${key}`)
    return [field, { env: s.env, flag: `--${s.flag}`, description: s.describe }]
  }),
)
