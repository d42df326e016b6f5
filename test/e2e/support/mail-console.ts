/**
 * The setup most console e2e files share, in one call: Mailroom started (support/console.ts)
 * with, as asked, a loopback DNS server and a recording SMTP sink that example.net's MX
 * points at; an administrator created through the CLI; optionally an API key; headless
 * Chromium; and `stop()` that ends all of it in reverse order.
 */
import type { Database } from 'bun:sqlite'
import type { Browser } from 'playwright-core'
import { startDnsServer, type DnsServer, type Zones } from '../../support/dns-server'
import { startSmtpSink, type SmtpSink } from '../../support/smtp-sink'
import { apiCall, createAdmin, createApiKey, launchBrowser, openSignedIn, startConsole, type ConsoleServer, type Viewport } from './console'

/** The administrator every console e2e file signs in as. */
export const ADMIN = { email: 'ops@example.com', password: 'correct horse battery' } as const
/** How long one e2e step (a start, a test) may take: a failure bound, not a timing assertion. */
export const STEP_MS = 180_000

/** example.net's mail goes to the sink: its MX, mx.example.net, is 127.0.0.1 (the sink's port comes from --mx-port). */
export const SINK_ZONES: Zones = {
  'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
  'mx.example.net': { A: ['127.0.0.1'] },
}

export interface MailConsoleOptions {
  /** The built binary (default) or src/main.ts. */
  from?: 'binary' | 'source'
  /** Runs on the migrated database before the server opens it. */
  seed?: (db: Database, now: number) => void
  /** The server's --hostname. */
  hostname?: string
  /**
   * Deliver for real: a recording SMTP sink on 127.0.0.1 (`--mx-port`), SINK_ZONES in the DNS
   * server, and sending domains usable before their DNS is verified.
   */
  mail?: boolean
  /** Zones of a loopback DNS server the server resolves through (`--dns-servers`); one is started with `mail` too. */
  zones?: Zones
  /** Further flags for `serve` (and every CLI command). */
  flags?: string[]
  /** Creates an Administrator API key of this name (`key`, `call`). */
  apiKey?: string
}

export interface MailConsole {
  server: ConsoleServer
  browser: Browser
  /** The recording sink (only with `mail`; reading it otherwise throws). */
  readonly sink: SmtpSink
  /** The loopback DNS server (only with `mail` or `zones`). */
  readonly dns: DnsServer
  /** The API key made with `apiKey`. */
  readonly key: string
  /** An API call with that key: the status and the parsed body. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
  /** A new page signed in as ADMIN at a width and theme; `close()` ends its browser context. */
  signedIn(view?: Viewport): ReturnType<typeof openSignedIn>
  /** Closes the browser, stops the server, the sink and the DNS server. */
  stop(): Promise<void>
}

/** Starts what a console e2e file needs (see MailConsoleOptions); stop it in afterAll. */
export async function startMailConsole(opts: MailConsoleOptions = {}): Promise<MailConsole> {
  const sink = opts.mail ? await startSmtpSink({ host: '127.0.0.1' }) : null
  const zones = opts.mail ? { ...SINK_ZONES, ...opts.zones } : opts.zones
  let dns: DnsServer | null = null
  let server: ConsoleServer | null = null
  let browser: Browser | null = null
  let key: string | null = null
  const stop = async () => {
    await browser?.close()
    await server?.stop()
    await sink?.close()
    await dns?.close()
  }
  try {
    dns = zones ? await startDnsServer({ zones }) : null
    const flags = [
      ...(opts.hostname ? ['--hostname', opts.hostname] : []),
      ...(dns ? ['--dns-servers', dns.server] : []),
      ...(sink ? ['--mx-port', String(sink.port), '--allow-unverified-domains', 'true'] : []),
      ...(opts.flags ?? []),
    ]
    server = await startConsole({ from: opts.from, seed: opts.seed, flags })
    await createAdmin(server, ADMIN.email, ADMIN.password)
    key = opts.apiKey ? await createApiKey(server, opts.apiKey) : null
    browser = await launchBrowser()
  } catch (e) {
    // Half a start leaves no process or port behind.
    await stop().catch(() => {})
    throw e
  }
  const need = <T>(v: T | null, what: string): T => {
    if (v === null) throw new Error(`startMailConsole: no ${what} was asked for`)
    return v
  }
  const started = { server, browser }
  return {
    ...started,
    get sink() {
      return need(sink, 'sink (mail: true)')
    },
    get dns() {
      return need(dns, 'DNS server (mail: true or zones)')
    },
    get key() {
      return need(key, 'API key (apiKey)')
    },
    call: (method, path, body) => apiCall(started.server.base, need(key, 'API key (apiKey)'), method, path, body),
    signedIn: (view = {}) => openSignedIn(started.browser, started.server.base, ADMIN.email, ADMIN.password, view),
    stop,
  }
}
