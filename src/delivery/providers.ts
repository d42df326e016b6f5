/**
 * Provider groups: receiving providers that run many domains on one infrastructure and
 * rate-limit by sending IP across all of them (a Google Workspace domain counts against the
 * same Gmail limits as gmail.com). A destination is put in a group by its MX host names;
 * well-known consumer domains are known without DNS. Any other destination is its own group,
 * named after its primary MX host ('mx:<host without its first label>').
 *
 * The per-group limits are per source IP. The defaults are deliberately conservative (what
 * the providers' sender guidelines and the operators of KumoMTA/PowerMTA publish as safe
 * starting points) and are overridden per group, and per pool and group, by `shaping_limits`.
 */

export interface GroupLimits {
  /** Most deliveries in progress at once per source IP (each holds one connection). */
  connections: number
  /** A connection is closed after this many messages. */
  messages_per_connection: number
  /** Ceiling of messages a minute per source IP; null = no limit. */
  per_minute: number | null
  /** Messages an hour per source IP; null = no limit. */
  per_hour: number | null
}

export interface ProviderGroup {
  id: string
  name: string
  /** MX host name suffixes (lower case, with the leading dot) that put a destination in the group. */
  mx: string[]
  /** Recipient domains known to be in the group without a lookup. */
  domains: string[]
  limits: GroupLimits
}

/** The built-in groups, in match order (docs/operations.md "Traffic shaping" lists them). */
export const PROVIDER_GROUPS: readonly ProviderGroup[] = [
  {
    id: 'gmail',
    name: 'Gmail / Google Workspace',
    mx: ['.google.com', '.googlemail.com'],
    domains: ['gmail.com', 'googlemail.com'],
    limits: { connections: 10, messages_per_connection: 100, per_minute: 600, per_hour: 20_000 },
  },
  {
    id: 'microsoft',
    name: 'Microsoft 365 / Outlook.com',
    mx: ['.protection.outlook.com', '.outlook.com', '.hotmail.com'],
    domains: ['outlook.com', 'hotmail.com', 'live.com', 'msn.com', 'hotmail.co.uk', 'outlook.de', 'hotmail.fr'],
    limits: { connections: 5, messages_per_connection: 50, per_minute: 300, per_hour: 10_000 },
  },
  {
    id: 'yahoo',
    name: 'Yahoo / AOL',
    mx: ['.yahoodns.net', '.yahoo.com', '.aol.com'],
    domains: ['yahoo.com', 'ymail.com', 'rocketmail.com', 'aol.com', 'yahoo.co.uk', 'yahoo.fr', 'yahoo.de'],
    limits: { connections: 5, messages_per_connection: 20, per_minute: 200, per_hour: 8_000 },
  },
  {
    id: 'icloud',
    name: 'iCloud',
    mx: ['.mail.icloud.com', '.icloud.com', '.me.com'],
    domains: ['icloud.com', 'me.com', 'mac.com'],
    limits: { connections: 5, messages_per_connection: 50, per_minute: 200, per_hour: 8_000 },
  },
  {
    id: 'gmx',
    name: 'GMX / Web.de',
    mx: ['.gmx.net', '.gmx.com', '.web.de', '.mail.com'],
    domains: ['gmx.net', 'gmx.de', 'gmx.com', 'gmx.at', 'gmx.ch', 'web.de', 'mail.com'],
    limits: { connections: 3, messages_per_connection: 50, per_minute: 120, per_hour: 5_000 },
  },
  {
    id: 'mailru',
    name: 'Mail.ru',
    mx: ['.mail.ru'],
    domains: ['mail.ru', 'inbox.ru', 'list.ru', 'bk.ru'],
    limits: { connections: 3, messages_per_connection: 50, per_minute: 120, per_hour: 5_000 },
  },
  {
    id: 'yandex',
    name: 'Yandex',
    mx: ['.yandex.net', '.yandex.ru'],
    domains: ['yandex.ru', 'yandex.com', 'ya.ru'],
    limits: { connections: 3, messages_per_connection: 50, per_minute: 120, per_hour: 5_000 },
  },
]

/** Limits of any destination outside the built-in groups: like a plain MTA, no rate ceiling. */
export const OTHER_LIMITS: GroupLimits = { connections: 20, messages_per_connection: 100, per_minute: null, per_hour: null }

/** The built-in group of a well-known recipient domain, without DNS; null when it is not one. */
export function groupOfDomain(domain: string): string | null {
  const d = domain.toLowerCase()
  return PROVIDER_GROUPS.find((g) => g.domains.includes(d))?.id ?? null
}

/** The group of a destination from its MX host names (preference order; the first is the primary). */
export function groupOfMxHosts(hosts: string[]): string | null {
  for (const raw of hosts) {
    const host = '.' + raw.toLowerCase().replace(/\.$/, '')
    const g = PROVIDER_GROUPS.find((p) => p.mx.some((suffix) => host.endsWith(suffix)))
    if (g) return g.id
  }
  const primary = hosts[0]?.toLowerCase().replace(/\.$/, '')
  if (!primary) return null
  const labels = primary.split('.')
  return `mx:${labels.length > 2 ? labels.slice(1).join('.') : primary}`
}

/** Overrides from `shaping_limits`: keys are a group id, or 'pool name/group id' for one pool. */
export type LimitOverrides = Record<string, Partial<GroupLimits>>

/** The limits of a group for a pool: built-in defaults < group override < pool/group override. */
export function limitsFor(overrides: LimitOverrides, group: string, poolName: string | null): GroupLimits {
  const base = PROVIDER_GROUPS.find((g) => g.id === group)?.limits ?? OTHER_LIMITS
  // 'other' overrides every group outside the built-in ones.
  const generic = group.startsWith('mx:') ? overrides['other'] : undefined
  return {
    ...base,
    ...generic,
    ...overrides[group],
    ...(poolName !== null ? generic && overrides[`${poolName}/other`] : undefined),
    ...(poolName !== null ? overrides[`${poolName}/${group}`] : undefined),
  }
}

/** Checks a `shaping_limits` value; returns why it is wrong, or null. */
export function checkLimitOverrides(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'expected a JSON object of group -> limits'
  const fields: Array<keyof GroupLimits> = ['connections', 'messages_per_connection', 'per_minute', 'per_hour']
  for (const [key, limits] of Object.entries(value)) {
    if (typeof limits !== 'object' || limits === null) return `"${key}": expected an object of limits`
    for (const [f, v] of Object.entries(limits)) {
      if (!fields.includes(f as keyof GroupLimits)) return `"${key}": unknown limit "${f}" (known: ${fields.join(', ')})`
      const nullable = f === 'per_minute' || f === 'per_hour'
      if (!(nullable && v === null) && !(Number.isInteger(v) && (v as number) >= 1))
        return `"${key}.${f}": expected a whole number of at least 1${nullable ? ' or null' : ''}`
    }
  }
  return null
}
