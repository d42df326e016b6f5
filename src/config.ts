import { DEFAULT_CACHE_MIB } from './db/client'
import { hostname as osHostname } from 'node:os'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { isIP } from 'node:net'
import { LOG_LEVELS, type LogLevel } from './lib/logger'
import { checkLimitOverrides, type LimitOverrides } from './delivery/providers'

/**
 * The one configuration schema. Precedence: defaults < TOML file (--config) < MAILROOM_*
 * environment < command-line flags. Values are validated once at start; a bad one stops
 * the program with a single line naming the setting. Later issues add their settings to
 * SETTINGS; docs/operations.md lists them all (a test keeps the two in step).
 */
export interface Config {
  data_dir: string
  http_listen: { host: string; port: number }
  public_url: string
  hostname: string
  log_level: LogLevel
  access_log: boolean
  validate_responses: boolean
  max_body_bytes: number
  max_import_bytes: number
  default_rate_limit: number | null
  trust_proxy: boolean
  admin_session_idle_minutes: number
  admin_session_max_hours: number
  dns_servers: string[]
  mx_port: number
  allow_unverified_domains: boolean
  max_message_age_seconds: number
  delivery_concurrency: number
  sqlite_cache_mib: number
  js_heap_ram_mib: number
  destination_concurrency: number
  delivery_timeouts: DeliveryTimeouts
  delivery_mta_sts: boolean
  delivery_require_tls: string[]
  shaping_limits: LimitOverrides
  shaping_suspend_minutes: number
  guardrail_window_minutes: number
  guardrail_min_sent: number
  guardrail_bounce_rate: number
  guardrail_complaint_rate: number
  default_from: string
  web_form_token_days: number
  web_form_challenge_max: number
  web_form_rate_per_minute: number
  smtp_listen: { host: string; port: number } | null
  smtp_tls_listen: { host: string; port: number } | null
  smtp_tls_cert: string
  smtp_tls_key: string
  smtp_plain_auth_loopback: boolean
  smtp_max_message_bytes: number
  smtp_max_recipients: number
  mx_listen: { host: string; port: number } | null
  webhooks_allow_private: boolean
  webhook_timeout_ms: number
  broadcast_max_lateness_seconds: number
  broadcast_queue_window: number
  broadcast_max_bounce_rate: number
  broadcast_max_complaint_rate: number
  broadcast_threshold_min_sample: number
  doctor_probe: { host: string; port: number } | null
  doctor_ip_blocklists: string[]
  doctor_domain_blocklists: string[]
  secret_key_file: string
  secret_key: string
}

/** Outbound SMTP timeouts in seconds: TCP connect, then RFC 5321 4.5.3.2's per command. */
export interface DeliveryTimeouts {
  connect: number
  greeting: number
  mail: number
  rcpt: number
  data: number
  data_block: number
  dot: number
}

const TIMEOUT_NAMES = ['connect', 'greeting', 'mail', 'rcpt', 'data', 'data_block', 'dot'] as const

/** "greeting=300,mail=300": the named timeouts in seconds; unnamed ones keep the defaults. */
function parseDeliveryTimeouts(text: string): DeliveryTimeouts {
  const out: DeliveryTimeouts = { connect: 30, greeting: 300, mail: 300, rcpt: 300, data: 120, data_block: 180, dot: 600 }
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([a-z_]+)\s*=\s*(\d+(?:\.\d+)?)$/.exec(part)
    if (!m || !(TIMEOUT_NAMES as readonly string[]).includes(m[1]!) || Number(m[2]) <= 0)
      fail(`expected NAME=SECONDS pairs separated by commas, names: ${TIMEOUT_NAMES.join(', ')}`)
    out[m![1] as keyof DeliveryTimeouts] = Number(m![2])
  }
  return out
}

type Key = keyof Config

interface Setting<K extends Key> {
  key: K
  env: string
  flag: string
  describe: string
  /** Default as a string, parsed like any other source; a function for values that depend on others. */
  fallback: string | ((partial: Partial<Config>) => string)
  /** How --help and the docs show a default given as a function. */
  defaultText?: string
  /** Never printed or logged (a key). */
  sensitive?: boolean
  parse: (text: string) => Config[K]
}

export class ConfigError extends Error {}

const fail = (why: string): never => {
  throw new ConfigError(why)
}

function parseListen(text: string): { host: string; port: number } {
  // host:port, with IPv6 hosts in brackets as in URLs (RFC 3986 section 3.2.2).
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s\[\]]+)):(\d{1,5})$/.exec(text.trim())
  if (!m) return fail('expected HOST:PORT, for example 127.0.0.1:8825 or [::1]:8825')
  const port = Number(m[3])
  if (port > 65535) fail('port must be 0-65535')
  return { host: m[1] ?? m[2]!, port }
}

/** A listener that can be switched off. */
function parseOptionalListen(text: string): { host: string; port: number } | null {
  return text.trim().toLowerCase() === 'off' ? null : parseListen(text)
}

function parseBool(text: string): boolean {
  const v = text.trim().toLowerCase()
  if (['true', '1', 'yes', 'on'].includes(v)) return true
  if (['false', '0', 'no', 'off'].includes(v)) return false
  return fail('expected true or false')
}

function parsePositiveInt(text: string): number {
  const v = text.trim()
  if (!/^\d+$/.test(v) || Number(v) < 1 || !Number.isSafeInteger(Number(v))) fail('expected a whole number of at least 1')
  return Number(v)
}

function parseNonNegativeInt(text: string): number {
  const v = text.trim()
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) fail('expected a whole number (0 or more)')
  return Number(v)
}

function parseRateLimit(text: string): number | null {
  return text.trim().toLowerCase() === 'unlimited' ? null : parsePositiveInt(text)
}

function parseUrl(text: string): string {
  let url: URL
  try {
    url = new URL(text.trim())
  } catch {
    return fail('expected an absolute http(s) URL, for example https://mail.example.com')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail('expected an http or https URL')
  return url.origin + url.pathname.replace(/\/+$/, '')
}

function parseHostname(text: string): string {
  const v = text.trim().toLowerCase()
  // RFC 1123 section 2.1 labels; the SMTP greeting and EHLO use this name (RFC 5321 section 4.1.1.1).
  if (v.length > 253 || !/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(v)) {
    fail('expected a DNS host name such as mail.example.com')
  }
  return v
}

function parseDnsServers(text: string): string[] {
  const v = text.trim()
  if (v === '' || v.toLowerCase() === 'system') return []
  return v.split(',').map((part) => {
    const entry = part.trim()
    // ADDRESS, IPV4:PORT or [IPV6]:PORT: the forms node:dns setServers() takes.
    const bracketed = /^\[([^\]]+)\]:(\d{1,5})$/.exec(entry)
    const v4port = /^([\d.]+):(\d{1,5})$/.exec(entry)
    const [host, port] = bracketed ? [bracketed[1]!, bracketed[2]] : v4port ? [v4port[1]!, v4port[2]] : [entry, undefined]
    if (isIP(host) === 0) fail(`"${entry}" is not ADDRESS or ADDRESS:PORT`)
    if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) fail(`"${entry}": port must be 1-65535`)
    return entry
  })
}

/** A comma-separated list of DNS zones (blocklists), or "none". */
function parseZones(text: string): string[] {
  const v = text.trim().toLowerCase()
  if (v === '' || v === 'none') return []
  return v.split(',').map((part) => {
    const zone = part.trim().replace(/\.$/, '')
    if (!/^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(zone)) fail(`"${part.trim()}" is not a DNS zone such as zen.spamhaus.org`)
    return zone
  })
}

function parseLimitOverrides(text: string): LimitOverrides {
  let value: unknown
  try {
    value = JSON.parse(text.trim() === '' ? '{}' : text)
  } catch {
    return fail('expected JSON such as {"gmail": {"per_minute": 300}}')
  }
  const why = checkLimitOverrides(value)
  return why ? fail(why) : (value as LimitOverrides)
}

function parseFraction(text: string): number {
  const v = Number(text.trim())
  if (text.trim() === '' || !Number.isFinite(v) || v <= 0 || v > 1) fail('expected a fraction greater than 0 and at most 1, such as 0.05')
  return v
}

function parsePort(text: string): number {
  const v = parsePositiveInt(text)
  return v > 65535 ? fail('port must be 1-65535') : v
}

function parseLogLevel(text: string): LogLevel {
  const v = text.trim().toLowerCase()
  return (LOG_LEVELS as readonly string[]).includes(v) ? (v as LogLevel) : fail(`expected one of ${LOG_LEVELS.join(', ')}`)
}

const setting = <K extends Key>(s: Setting<K>) => s

/** Every setting, in the order docs/operations.md shows them. */
export const SETTINGS = [
  setting({
    key: 'data_dir',
    env: 'MAILROOM_DATA_DIR',
    flag: 'data-dir',
    fallback: './data',
    parse: (t) => t.trim() || fail('must not be empty'),
    describe: 'Directory of the database (mailroom.db) and its automatic backups.',
  }),
  setting({
    key: 'http_listen',
    env: 'MAILROOM_HTTP_LISTEN',
    flag: 'http-listen',
    fallback: '127.0.0.1:8825',
    parse: parseListen,
    describe: 'Address and port of the HTTP API, docs and admin UI. Use 0.0.0.0:8825 to listen on all interfaces.',
  }),
  setting({
    key: 'public_url',
    env: 'MAILROOM_PUBLIC_URL',
    flag: 'public-url',
    fallback: (c) => `http://${c.http_listen!.host.includes(':') ? `[${c.http_listen!.host}]` : c.http_listen!.host}:${c.http_listen!.port}`,
    parse: parseUrl,
    defaultText: 'http://HTTP_LISTEN',
    describe: 'Base URL under which users reach this server (links in mail, webhooks, docs). Defaults to the listen address.',
  }),
  setting({
    key: 'hostname',
    env: 'MAILROOM_HOSTNAME',
    flag: 'hostname',
    fallback: () => osHostname() || 'localhost',
    parse: parseHostname,
    defaultText: 'the machine name',
    describe: 'Host name of this server, used in SMTP greetings and Message-IDs. Defaults to the machine name.',
  }),
  setting({ key: 'log_level', env: 'MAILROOM_LOG_LEVEL', flag: 'log-level', fallback: 'info', parse: parseLogLevel, describe: 'debug, info, warn or error.' }),
  setting({
    key: 'access_log',
    env: 'MAILROOM_ACCESS_LOG',
    flag: 'access-log',
    fallback: 'true',
    parse: parseBool,
    describe: 'Log one line per HTTP request (at info level).',
  }),
  setting({
    key: 'validate_responses',
    env: 'MAILROOM_VALIDATE_RESPONSES',
    flag: 'validate-responses',
    fallback: 'false',
    parse: parseBool,
    describe:
      'Check every API response against its schema before sending it (the tests always do, and fail on any undeclared field; off saves that work per request).',
  }),
  setting({
    key: 'max_body_bytes',
    env: 'MAILROOM_MAX_BODY_BYTES',
    flag: 'max-body-bytes',
    fallback: String(10 * 1024 * 1024),
    parse: parsePositiveInt,
    describe: 'Largest accepted HTTP request body in bytes; larger requests get 413 payload_too_large.',
  }),
  setting({
    key: 'max_import_bytes',
    env: 'MAILROOM_MAX_IMPORT_BYTES',
    flag: 'max-import-bytes',
    fallback: String(1024 * 1024 * 1024),
    parse: parsePositiveInt,
    describe: 'Largest contact import file in bytes (uploads stream to disk, never into memory).',
  }),
  setting({
    key: 'default_rate_limit',
    env: 'MAILROOM_DEFAULT_RATE_LIMIT',
    flag: 'default-rate-limit',
    fallback: '600',
    parse: parseRateLimit,
    describe: 'Requests per minute for new API keys that do not name their own limit; a number or "unlimited".',
  }),
  setting({
    key: 'trust_proxy',
    env: 'MAILROOM_TRUST_PROXY',
    flag: 'trust-proxy',
    fallback: 'false',
    parse: parseBool,
    describe: 'Take the client address from the last X-Forwarded-For entry (only behind a reverse proxy you run).',
  }),
  setting({
    key: 'admin_session_idle_minutes',
    env: 'MAILROOM_ADMIN_SESSION_IDLE_MINUTES',
    flag: 'admin-session-idle-minutes',
    fallback: '60',
    parse: parsePositiveInt,
    describe: 'A console session ends after this many minutes without a request.',
  }),
  setting({
    key: 'admin_session_max_hours',
    env: 'MAILROOM_ADMIN_SESSION_MAX_HOURS',
    flag: 'admin-session-max-hours',
    fallback: '12',
    parse: parsePositiveInt,
    describe: 'A console session ends this many hours after sign-in, however active.',
  }),
  setting({
    key: 'dns_servers',
    env: 'MAILROOM_DNS_SERVERS',
    flag: 'dns-servers',
    fallback: 'system',
    parse: parseDnsServers,
    describe: 'DNS servers for MX lookups and domain verification: comma-separated ADDRESS or ADDRESS:PORT, or "system".',
  }),
  setting({
    key: 'mx_port',
    env: 'MAILROOM_MX_PORT',
    flag: 'mx-port',
    fallback: '25',
    parse: parsePort,
    describe: 'TCP port of direct-to-MX delivery. Change only for tests.',
  }),
  setting({
    key: 'allow_unverified_domains',
    env: 'MAILROOM_ALLOW_UNVERIFIED_DOMAINS',
    flag: 'allow-unverified-domains',
    fallback: 'false',
    parse: parseBool,
    describe: 'Accept mail from senders whose domain is not a verified sending domain; such mail goes out unsigned.',
  }),
  setting({
    key: 'max_message_age_seconds',
    env: 'MAILROOM_MAX_MESSAGE_AGE_SECONDS',
    flag: 'max-message-age-seconds',
    fallback: String(5 * 24 * 3600),
    parse: parsePositiveInt,
    describe: 'How long a deferred recipient is retried before it fails (expired); RFC 5321 section 4.5.4.1 suggests 4-5 days.',
  }),
  setting({
    key: 'sqlite_cache_mib',
    env: 'MAILROOM_SQLITE_CACHE_MIB',
    flag: 'sqlite-cache-mib',
    fallback: String(DEFAULT_CACHE_MIB),
    parse: parsePositiveInt,
    describe: "SQLite's page cache in MiB: more makes big segment counts and reports faster and the server larger.",
  }),
  setting({
    key: 'js_heap_ram_mib',
    env: 'MAILROOM_JS_HEAP_RAM_MIB',
    flag: 'js-heap-ram-mib',
    fallback: '512',
    parse: parseNonNegativeInt,
    describe:
      "The memory JavaScriptCore's garbage collector sizes the heap for, in MiB (BUN_JSC_forceRAMSize): it lets garbage grow to a share of the machine's memory before a full collection, so on a large machine a busy server holds hundreds of MiB of garbage. serve re-executes itself once at start to apply it; 0 leaves the runtime's own sizing.",
  }),
  setting({
    key: 'delivery_concurrency',
    env: 'MAILROOM_DELIVERY_CONCURRENCY',
    flag: 'delivery-concurrency',
    fallback: '64',
    parse: parsePositiveInt,
    describe: 'Most SMTP connections open for delivery at once.',
  }),
  setting({
    key: 'destination_concurrency',
    env: 'MAILROOM_DESTINATION_CONCURRENCY',
    flag: 'destination-concurrency',
    fallback: '20',
    parse: parsePositiveInt,
    describe: 'Most SMTP connections open at once to one destination domain (Postfix defaults to 20 as well).',
  }),
  setting({
    key: 'delivery_timeouts',
    env: 'MAILROOM_DELIVERY_TIMEOUTS',
    flag: 'delivery-timeouts',
    fallback: 'connect=30,greeting=300,mail=300,rcpt=300,data=120,data_block=180,dot=600',
    parse: parseDeliveryTimeouts,
    describe:
      'Outbound SMTP timeouts in seconds (NAME=SECONDS, comma-separated; unnamed ones keep their default): TCP connect, then RFC 5321 section 4.5.3.2: greeting, MAIL, RCPT, DATA, each data block, final dot.',
  }),
  setting({
    key: 'delivery_mta_sts',
    env: 'MAILROOM_DELIVERY_MTA_STS',
    flag: 'delivery-mta-sts',
    fallback: 'true',
    parse: parseBool,
    describe:
      'Honour MTA-STS (RFC 8461): a recipient domain whose policy is in enforce mode gets mail only over verified TLS to its listed MX hosts; policies are cached for their max_age.',
  }),
  setting({
    key: 'delivery_require_tls',
    env: 'MAILROOM_DELIVERY_REQUIRE_TLS',
    flag: 'delivery-require-tls',
    fallback: '',
    parse: (t) => {
      const domains = t
        .split(',')
        .map((d) => d.trim().toLowerCase().replace(/\.$/, ''))
        .filter(Boolean)
      for (const d of domains) if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(d)) fail(`"${d}" is not a domain name`)
      return domains
    },
    describe: 'Recipient domains (comma-separated) whose mail goes only over STARTTLS: deferred, never sent in plaintext, when the MX does not offer it.',
  }),
  setting({
    key: 'shaping_limits',
    env: 'MAILROOM_SHAPING_LIMITS',
    flag: 'shaping-limits',
    fallback: '{}',
    parse: parseLimitOverrides,
    describe: 'Traffic-shaping limits per provider group ("gmail") or pool and group ("marketing/gmail"), JSON; see "Traffic shaping".',
  }),
  setting({
    key: 'shaping_suspend_minutes',
    env: 'MAILROOM_SHAPING_SUSPEND_MINUTES',
    flag: 'shaping-suspend-minutes',
    fallback: '240',
    parse: parsePositiveInt,
    describe: 'How long a provider group/IP pair is suspended after a block reply (5.7.1 listed by Spamhaus and the like).',
  }),
  setting({
    key: 'guardrail_window_minutes',
    env: 'MAILROOM_GUARDRAIL_WINDOW_MINUTES',
    flag: 'guardrail-window-minutes',
    fallback: '60',
    parse: parsePositiveInt,
    describe: 'Window over which the bounce and complaint rates of each pool and sending domain are measured for auto-pause.',
  }),
  setting({
    key: 'guardrail_min_sent',
    env: 'MAILROOM_GUARDRAIL_MIN_SENT',
    flag: 'guardrail-min-sent',
    fallback: '100',
    parse: parsePositiveInt,
    describe: 'Fewest delivery outcomes in the window before a rate can trigger auto-pause.',
  }),
  setting({
    key: 'guardrail_bounce_rate',
    env: 'MAILROOM_GUARDRAIL_BOUNCE_RATE',
    flag: 'guardrail-bounce-rate',
    fallback: '0.05',
    parse: parseFraction,
    describe: 'Bounce share (0-1) of a pool or sending domain in the window that pauses its running broadcasts and automations.',
  }),
  setting({
    key: 'guardrail_complaint_rate',
    env: 'MAILROOM_GUARDRAIL_COMPLAINT_RATE',
    flag: 'guardrail-complaint-rate',
    fallback: '0.003',
    parse: parseFraction,
    describe: 'Complaint share (0-1, complaints / delivered) that pauses running broadcasts and automations; Gmail and Yahoo require staying under 0.3 %.',
  }),
  setting({
    key: 'default_from',
    env: 'MAILROOM_DEFAULT_FROM',
    flag: 'default-from',
    fallback: '',
    parse: (t) => {
      const v = t.trim()
      if (v !== '' && (/[\r\n]/.test(v) || !/@[^@\s]+\.[^@\s]+>?$/.test(v))) fail('expected an address such as "Acme <hello@acme.com>"')
      return v
    },
    describe: 'Sender of template sends (POST /api/v2/dynamicTemplate/{id}) whose request names no "from".',
  }),
  setting({
    key: 'web_form_token_days',
    env: 'MAILROOM_WEB_FORM_TOKEN_DAYS',
    flag: 'web-form-token-days',
    fallback: '7',
    parse: parsePositiveInt,
    describe: 'Days a double opt-in confirmation link stays valid; a pending submission not confirmed by then is refused.',
  }),
  setting({
    key: 'web_form_challenge_max',
    env: 'MAILROOM_WEB_FORM_CHALLENGE_MAX',
    flag: 'web-form-challenge-max',
    fallback: '50000',
    parse: parsePositiveInt,
    describe: "Web forms' proof-of-work difficulty: the largest secret counter (a browser tries half of it on average, about a second at 50,000).",
  }),
  setting({
    key: 'web_form_rate_per_minute',
    env: 'MAILROOM_WEB_FORM_RATE_PER_MINUTE',
    flag: 'web-form-rate-per-minute',
    fallback: '10',
    parse: parsePositiveInt,
    describe: 'Web form submissions and confirmations accepted per client IP per minute; more get 429.',
  }),
  setting({
    key: 'smtp_listen',
    env: 'MAILROOM_SMTP_LISTEN',
    flag: 'smtp-listen',
    fallback: '127.0.0.1:2587',
    parse: parseOptionalListen,
    describe: 'SMTP submission listener for bridges (STARTTLS), HOST:PORT or "off". Use 0.0.0.0:587 to serve other hosts.',
  }),
  setting({
    key: 'smtp_tls_listen',
    env: 'MAILROOM_SMTP_TLS_LISTEN',
    flag: 'smtp-tls-listen',
    fallback: 'off',
    parse: parseOptionalListen,
    describe: 'SMTP submission with implicit TLS (RFC 8314), HOST:PORT such as 0.0.0.0:465, or "off".',
  }),
  setting({
    key: 'smtp_tls_cert',
    env: 'MAILROOM_SMTP_TLS_CERT',
    flag: 'smtp-tls-cert',
    fallback: '',
    parse: (t) => t.trim(),
    describe: 'PEM certificate (chain) file for the SMTP listeners; empty: a self-signed one kept in DATA_DIR/tls/.',
  }),
  setting({
    key: 'smtp_tls_key',
    env: 'MAILROOM_SMTP_TLS_KEY',
    flag: 'smtp-tls-key',
    fallback: '',
    parse: (t) => t.trim(),
    describe: 'PEM private key file of smtp_tls_cert.',
  }),
  setting({
    key: 'smtp_plain_auth_loopback',
    env: 'MAILROOM_SMTP_PLAIN_AUTH_LOOPBACK',
    flag: 'smtp-plain-auth-loopback',
    fallback: 'false',
    parse: parseBool,
    describe: 'Allow AUTH without TLS for clients connecting from a loopback address.',
  }),
  setting({
    key: 'smtp_max_message_bytes',
    env: 'MAILROOM_SMTP_MAX_MESSAGE_BYTES',
    flag: 'smtp-max-message-bytes',
    fallback: String(25 * 1024 * 1024),
    parse: parsePositiveInt,
    describe: 'Largest message the SMTP listeners accept (advertised with SIZE, RFC 1870).',
  }),
  setting({
    key: 'smtp_max_recipients',
    env: 'MAILROOM_SMTP_MAX_RECIPIENTS',
    flag: 'smtp-max-recipients',
    fallback: '100',
    parse: parsePositiveInt,
    describe: 'Most RCPT TO per submitted message.',
  }),
  setting({
    key: 'mx_listen',
    env: 'MAILROOM_MX_LISTEN',
    flag: 'mx-listen',
    fallback: 'off',
    parse: parseOptionalListen,
    describe: 'Inbound listener for bounces, complaints and DMARC reports (port 25 of the return-path host), HOST:PORT or "off".',
  }),
  setting({
    key: 'webhooks_allow_private',
    env: 'MAILROOM_WEBHOOKS_ALLOW_PRIVATE',
    flag: 'webhooks-allow-private',
    fallback: 'false',
    parse: parseBool,
    describe: 'Allow webhook endpoints on private, loopback and link-local addresses (refused by default: SSRF).',
  }),
  setting({
    key: 'webhook_timeout_ms',
    env: 'MAILROOM_WEBHOOK_TIMEOUT_MS',
    flag: 'webhook-timeout-ms',
    fallback: '10000',
    parse: parsePositiveInt,
    describe: 'How long a webhook endpoint has to answer before the attempt counts as failed.',
  }),
  setting({
    key: 'broadcast_max_lateness_seconds',
    env: 'MAILROOM_BROADCAST_MAX_LATENESS_SECONDS',
    flag: 'broadcast-max-lateness-seconds',
    fallback: '3600',
    parse: parsePositiveInt,
    describe: 'A scheduled broadcast found due later than this (the server was down) pauses with the reason instead of sending late.',
  }),
  setting({
    key: 'broadcast_queue_window',
    env: 'MAILROOM_BROADCAST_QUEUE_WINDOW',
    flag: 'broadcast-queue-window',
    fallback: '1000',
    parse: parsePositiveInt,
    describe: 'Most messages of one broadcast rendered and queued but not yet delivered; the next are rendered as these finish.',
  }),
  setting({
    key: 'broadcast_max_bounce_rate',
    env: 'MAILROOM_BROADCAST_MAX_BOUNCE_RATE',
    flag: 'broadcast-max-bounce-rate',
    fallback: '0.05',
    parse: parseFraction,
    describe: 'A sending broadcast pauses when its bounce rate exceeds this fraction (0-1), unless the broadcast sets its own.',
  }),
  setting({
    key: 'broadcast_max_complaint_rate',
    env: 'MAILROOM_BROADCAST_MAX_COMPLAINT_RATE',
    flag: 'broadcast-max-complaint-rate',
    fallback: '0.003',
    parse: parseFraction,
    describe: 'A sending broadcast pauses when its complaint rate exceeds this fraction (0-1), unless the broadcast sets its own.',
  }),
  setting({
    key: 'broadcast_threshold_min_sample',
    env: 'MAILROOM_BROADCAST_THRESHOLD_MIN_SAMPLE',
    flag: 'broadcast-threshold-min-sample',
    fallback: '200',
    parse: parsePositiveInt,
    describe: 'Messages with an outcome a broadcast needs before the bounce and complaint thresholds apply.',
  }),
  setting({
    key: 'doctor_probe',
    env: 'MAILROOM_DOCTOR_PROBE',
    flag: 'doctor-probe',
    fallback: 'off',
    parse: parseOptionalListen,
    describe: 'HOST:PORT the deliverability doctor connects to to tell whether outbound TCP port 25 is open (an SMTP server you trust), or "off".',
  }),
  setting({
    key: 'doctor_ip_blocklists',
    env: 'MAILROOM_DOCTOR_IP_BLOCKLISTS',
    flag: 'doctor-ip-blocklists',
    fallback: 'zen.spamhaus.org,bl.spamcop.net,b.barracudacentral.org',
    parse: parseZones,
    describe: 'DNS blocklist zones the deliverability doctor looks each sending IP up in (comma-separated), or "none".',
  }),
  setting({
    key: 'doctor_domain_blocklists',
    env: 'MAILROOM_DOCTOR_DOMAIN_BLOCKLISTS',
    flag: 'doctor-domain-blocklists',
    fallback: 'dbl.spamhaus.org',
    parse: parseZones,
    describe: 'Domain blocklist zones the deliverability doctor looks each sending domain up in (comma-separated), or "none".',
  }),
  setting({
    key: 'secret_key_file',
    env: 'MAILROOM_SECRET_KEY_FILE',
    flag: 'secret-key-file',
    fallback: (c) => join(c.data_dir!, 'secret.key'),
    defaultText: 'DATA_DIR/secret.key',
    parse: (t) => t.trim() || fail('must not be empty'),
    describe:
      'File of the key that seals the secrets in the database (DKIM keys, passwords, webhook secrets); made (0600) on first start. Keep a copy apart from the backups.',
  }),
  setting({
    key: 'secret_key',
    env: 'MAILROOM_SECRET_KEY',
    flag: 'secret-key',
    fallback: '',
    sensitive: true,
    parse: (t) => {
      const v = t.trim()
      if (v !== '' && Buffer.from(v, 'base64').length !== 32) fail('expected the base64 form of 32 random bytes (openssl rand -base64 32)')
      return v
    },
    describe: 'The key itself (base64 of 32 bytes) instead of secret_key_file. Set it in the environment: a flag shows in the process list.',
  }),
] as const

export interface ConfigSources {
  /** Parsed TOML file contents, keys are setting names. */
  file?: Record<string, unknown>
  env?: Record<string, string | undefined>
  flags?: Record<string, string | undefined>
}

/** A setting whose value is not its default, and where the value came from. */
export interface ChangedSetting {
  key: string
  value: unknown
  from: string
}

/** Builds the frozen configuration; throws ConfigError with one line naming the setting. */
export function loadConfig(sources: ConfigSources): Readonly<Config> {
  return resolveConfig(sources).config
}

/** The configuration and the settings that differ from their defaults (sensitive values shown as "(set)"), for the start log. */
export function resolveConfig(sources: ConfigSources): { config: Readonly<Config>; changed: ChangedSetting[] } {
  const { file = {}, env = {}, flags = {} } = sources
  const known = new Set<string>(SETTINGS.map((s) => s.key))
  for (const k of Object.keys(file)) if (!known.has(k)) throw new ConfigError(`config file: unknown setting "${k}"`)

  const out: Partial<Config> = {}
  const changed: ChangedSetting[] = []
  for (const s of SETTINGS) {
    let source: string
    let raw: string
    if (flags[s.flag] !== undefined) [source, raw] = [`--${s.flag}`, flags[s.flag]!]
    else if (env[s.env] !== undefined && env[s.env] !== '') [source, raw] = [s.env, env[s.env]!]
    else if (file[s.key] !== undefined)
      [source, raw] = [`config file "${s.key}"`, typeof file[s.key] === 'object' ? JSON.stringify(file[s.key]) : String(file[s.key])]
    else [source, raw] = ['default', typeof s.fallback === 'function' ? s.fallback(out) : s.fallback]
    try {
      ;(out as Record<string, unknown>)[s.key] = s.parse(raw)
    } catch (e) {
      if (e instanceof ConfigError) throw new ConfigError(`invalid ${s.key} from ${source} (${JSON.stringify(raw)}): ${e.message}`)
      throw e
    }
    const value = out[s.key]
    if (source !== 'default' && JSON.stringify(value) !== JSON.stringify(s.parse(typeof s.fallback === 'function' ? s.fallback(out) : s.fallback)))
      changed.push({ key: s.key, value: 'sensitive' in s && s.sensitive ? '(set)' : value, from: source })
  }
  return { config: Object.freeze(out as Config), changed }
}

/** How --help shows a setting's default. */
export function defaultOf(s: (typeof SETTINGS)[number]): string {
  if ('defaultText' in s && s.defaultText) return s.defaultText
  return typeof s.fallback === 'string' && s.fallback !== '' ? s.fallback : 'none'
}

/** Reads and parses a TOML configuration file. */
export function readConfigFile(path: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (e) {
    throw new ConfigError(`config file ${path}: cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  try {
    return Bun.TOML.parse(text) as Record<string, unknown>
  } catch (e) {
    throw new ConfigError(`config file ${path}: not valid TOML (${(e as Error).message})`)
  }
}

/** Reads the environment; the only place outside main.ts allowed to. */
export function processEnv(): Record<string, string | undefined> {
  return process.env
}
