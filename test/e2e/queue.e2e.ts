/**
 * The Queue page (Sending > Queue) in headless Chromium, against Mailroom started from source
 * with its DNS pointed at the loopback DNS server and direct delivery at the recording sink:
 * a Gmail recipient answered with Gmail's 421 4.7.28 "unusual rate" shows the Gmail group
 * throttled with one deferred recipient; mail to example.net leaves over the pool's IP; the
 * IP's warm-up is started from the page. Screenshots land in docs/screenshots/.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { until } from '../support/server-process'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'
import { accessibilityFindings, createAdmin, createApiKey, launchBrowser, openSignedIn, shot, startConsole, type ConsoleServer } from './support/console'

const EMAIL = 'ops@example.com'
const PASSWORD = 'correct horse battery'
const HOSTNAME = 'mail.example.com'
const STEP_MS = 180_000

let server: ConsoleServer
let browser: Browser
let dns: DnsServer
let sink: SmtpSink
let key: string

async function call(method: string, path: string, body?: unknown) {
  const r = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  return { status: r.status, body: (await r.json()) as any }
}

beforeAll(async () => {
  sink = await startSmtpSink({ host: '127.0.0.1' })
  dns = await startDnsServer({
    zones: {
      [HOSTNAME]: { A: ['127.0.0.1'] },
      'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
      'mx.example.net': { A: ['127.0.0.1'] },
      // gmail.com's real MX name, answered on loopback: the provider group comes from it.
      'gmail.com': { MX: [{ exchange: 'gmail-smtp-in.l.google.com', priority: 5 }] },
      'gmail-smtp-in.l.google.com': { A: ['127.0.0.1'] },
    },
  })
  server = await startConsole({
    from: 'source',
    flags: ['--hostname', HOSTNAME, '--dns-servers', dns.server, '--mx-port', String(sink.port), '--allow-unverified-domains', 'true'],
  })
  await createAdmin(server, EMAIL, PASSWORD)
  key = await createApiKey(server, 'queue e2e')
  browser = await launchBrowser()
}, STEP_MS)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  await dns?.close()
  await sink?.close()
})

test(
  'the queue by provider and IP: a throttled Gmail, mail over the pool IP, and a warm-up started from the page',
  async () => {
    const ip = await call('POST', '/api/v2/ips', { address: '127.0.0.1', hostname: HOSTNAME })
    expect(ip.status).toBe(201)
    expect((await call('POST', '/api/v2/ip-pools', { name: 'main', is_default: true, members: [{ ip_id: ip.body.data.id, weight: 1 }] })).status).toBe(201)
    const send = (to: string) => call('POST', '/v1/emails', { from: 'Ada <ada@example.org>', to: [to], subject: 'Hello', text: 'Hi' })
    expect((await send('ratelimit@gmail.com')).status).toBe(202)
    for (const to of ['ann@example.net', 'bob@example.net', 'cy@example.net']) expect((await send(to)).status).toBe(202)
    await until('the sink took three messages and refused the Gmail one', () => sink.messages.length === 3 && sink.refused.length === 1)
    // The sink counts the refusal before the engine records it: wait for the engine's state.
    let queue = (await call('GET', '/api/v2/queue')).body.data
    while (!queue.pairs.some((p: { state: string }) => p.state === 'throttled')) {
      await Bun.sleep(50)
      queue = (await call('GET', '/api/v2/queue')).body.data
    }
    expect(queue.pairs).toContainEqual(expect.objectContaining({ provider: 'gmail', ip: '127.0.0.1', state: 'throttled' }))
    expect(queue.providers).toContainEqual(expect.objectContaining({ provider: 'gmail', deferred: 1 }))
    // The sink offers STARTTLS: every delivery to example.net went over TLS, once the statistics rollup has counted them.
    const counted = () => queue.providers.find((p: { provider: string }) => p.provider === 'mx:example.net')?.sent_24h === 3
    while (!counted()) {
      await Bun.sleep(50)
      queue = (await call('GET', '/api/v2/queue')).body.data
    }
    expect(queue.providers).toContainEqual(expect.objectContaining({ provider: 'mx:example.net', sent_24h: 3, tls_share: 1 }))

    const { page, close } = await openSignedIn(browser, server.base, EMAIL, PASSWORD)
    await page.goto(`${server.base}/admin/sending/queue`)
    await page.getByRole('heading', { name: 'Queue', exact: true }).waitFor()
    const byProvider = page.getByRole('table', { name: 'Queue by provider' })
    const gmail = byProvider.getByRole('row').filter({ hasText: 'Gmail / Google Workspace' })
    await gmail.waitFor()
    expect(await gmail.getByText('Throttled').count()).toBe(1)
    expect(await byProvider.getByRole('row').filter({ hasText: 'example.net' }).getByText('100 % of 3').count()).toBe(1)
    const pairs = page.getByRole('table', { name: 'Throttled and suspended pairs' })
    expect(await pairs.getByRole('row').filter({ hasText: '127.0.0.1' }).getByText('4.7.28', { exact: false }).count()).toBe(1)

    const byIp = page.getByRole('table', { name: 'Queue by IP' })
    const row = byIp.getByRole('row').filter({ hasText: '127.0.0.1' })
    expect(await row.getByText('Warm', { exact: true }).count()).toBe(1)
    await row.getByRole('button', { name: 'Start warm-up of 127.0.0.1' }).click()
    await row.getByText('Day 1 of 30').waitFor()
    await row.getByText('each provider: 0 of 50 today').waitFor()
    await page.addStyleTag({ content: '[data-sonner-toaster] { visibility: hidden !important; }' })
    await shot(page, 'queue', { theme: 'dark', width: 1440 })
    await shot(page, 'queue', { theme: 'light', width: 1440 })
    const warmup = await call('GET', `/api/v2/ips/${ip.body.data.id}/warmup`)
    expect(warmup.body.data).toMatchObject({ active: true, day: 1, schedule_kind: 'default' })
    await close()

    // No serious or critical axe-core finding, light and dark.
    const found = await accessibilityFindings(server.base, [{ path: '/admin/sending/queue', heading: 'Queue' }], (theme) =>
      openSignedIn(browser, server.base, EMAIL, PASSWORD, { theme }),
    )
    expect(found).toEqual([])
  },
  STEP_MS,
)
