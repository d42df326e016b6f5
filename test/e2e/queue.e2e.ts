/**
 * The Queue page (Sending > Queue) in headless Chromium, against Mailroom started from source
 * with its DNS pointed at the loopback DNS server and direct delivery at the recording sink:
 * a Gmail recipient answered with Gmail's 421 4.7.28 "unusual rate" shows the Gmail group
 * throttled with one deferred recipient; mail to example.net leaves over the pool's IP; the
 * IP's warm-up is started from the page. Screenshots land in docs/screenshots/.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { until } from '../support/server-process'
import { accessibilityFindings, shot } from './support/console'
import { STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

const HOSTNAME = 'mail.example.com'

let mc: MailConsole

beforeAll(async () => {
  mc = await startMailConsole({
    from: 'source',
    mail: true,
    hostname: HOSTNAME,
    zones: {
      [HOSTNAME]: { A: ['127.0.0.1'] },
      // gmail.com's real MX name, answered on loopback: the provider group comes from it.
      'gmail.com': { MX: [{ exchange: 'gmail-smtp-in.l.google.com', priority: 5 }] },
      'gmail-smtp-in.l.google.com': { A: ['127.0.0.1'] },
    },
    apiKey: 'queue e2e',
  })
}, STEP_MS)

afterAll(() => mc?.stop())

test(
  'the queue by provider and IP: a throttled Gmail, mail over the pool IP, and a warm-up started from the page',
  async () => {
    const ip = await mc.call('POST', '/api/v2/ips', { address: '127.0.0.1', hostname: HOSTNAME })
    expect(ip.status).toBe(201)
    expect((await mc.call('POST', '/api/v2/ip-pools', { name: 'main', is_default: true, members: [{ ip_id: ip.body.data.id, weight: 1 }] })).status).toBe(201)
    const send = (to: string) => mc.call('POST', '/v1/emails', { from: 'Ada <ada@example.org>', to: [to], subject: 'Hello', text: 'Hi' })
    expect((await send('ratelimit@gmail.com')).status).toBe(202)
    for (const to of ['ann@example.net', 'bob@example.net', 'cy@example.net']) expect((await send(to)).status).toBe(202)
    await until('the sink took three messages and refused the Gmail one', () => mc.sink.messages.length === 3 && mc.sink.refused.length === 1)
    // The sink counts the refusal before the engine records it, and the engine throttles the
    // pair before the recipient's deferral commits: wait for the page's data to show both.
    let queue = (await mc.call('GET', '/api/v2/queue')).body.data
    const queueShows = async (what: string, check: () => boolean) => {
      const end = Date.now() + 20_000
      while (!check()) {
        if (Date.now() > end) throw new Error(`gave up waiting for the queue to show ${what}: ${JSON.stringify(queue)}`)
        await Bun.sleep(50)
        queue = (await mc.call('GET', '/api/v2/queue')).body.data
      }
    }
    const provider = (name: string) => queue.providers.find((p: { provider: string }) => p.provider === name)
    await queueShows(
      'Gmail throttled with one deferred recipient',
      () => queue.pairs.some((p: { state: string }) => p.state === 'throttled') && provider('gmail')?.deferred === 1,
    )
    expect(queue.pairs).toContainEqual(expect.objectContaining({ provider: 'gmail', ip: '127.0.0.1', state: 'throttled' }))
    expect(queue.providers).toContainEqual(expect.objectContaining({ provider: 'gmail', deferred: 1 }))
    // The sink offers STARTTLS: every delivery to example.net went over TLS, once the statistics rollup has counted them.
    await queueShows('three messages sent to example.net', () => provider('mx:example.net')?.sent_24h === 3)
    expect(queue.providers).toContainEqual(expect.objectContaining({ provider: 'mx:example.net', sent_24h: 3, tls_share: 1 }))

    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/sending/queue`)
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
    const warmup = await mc.call('GET', `/api/v2/ips/${ip.body.data.id}/warmup`)
    expect(warmup.body.data).toMatchObject({ active: true, day: 1, schedule_kind: 'default' })
    await close()

    // No serious or critical axe-core finding, light and dark.
    const found = await accessibilityFindings(mc.server.base, [{ path: '/admin/sending/queue', heading: 'Queue' }], (theme) => mc.signedIn({ theme }))
    expect(found).toEqual([])
  },
  STEP_MS,
)
