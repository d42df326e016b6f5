import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import SMTPConnection from 'nodemailer/lib/smtp-connection'
import { createIpRotation } from '../../../src/delivery/ip-rotation'
import { createDeliveryEngine } from '../../../src/delivery/scheduler'
import { createTransport } from '../../../src/delivery/transport'
import { createResolver } from '../../../src/lib/dns'
import { drainStats } from '../../../src/modules/stats/rollup'
import { startInboundListener, type InboundListener } from '../../../src/smtp/inbound/listener'
import { testApp } from '../../support/app'
import { useMailWorld } from '../../support/mail-world'
import { FIXTURES } from '../reports/support'

/**
 * Bounce reasons end to end: mail sent through the API and delivered to the recording sink
 * (so its return path carries a signed token), then bounces of the labelled corpus, each in
 * another MTA's layout, handed to the inbound listener over SMTP. The reason lands on the
 * recipient row, in the event, in the message view and in the statistics by reason; only
 * the dead address is suppressed.
 */
const world = useMailWorld({})

function submit(listener: InboundListener, to: string, raw: string): Promise<string> {
  const connection = new SMTPConnection({ host: '127.0.0.1', port: listener.port, ignoreTLS: true, name: 'mx.reporter.test', socketTimeout: 20_000 })
  return new Promise<string>((resolve, reject) => {
    connection.once('error', reject)
    connection.connect(() =>
      connection.send({ from: '', to: [to] }, raw, (err, info) => {
        connection.close()
        if (err) reject(err)
        else resolve(info.response)
      }),
    )
  })
}

const corpus = (file: string) => readFileSync(join(FIXTURES, 'corpus', file), 'utf8').replace(/\r?\n/g, '\r\n')

test('the reason of a bounce is stored, shown, counted, and only a dead address is suppressed', async () => {
  world.sink.reset()
  const t = testApp({ mx_port: world.sink.port, dns_servers: [world.zone.server] })
  const admin = t.makeKey()
  const transport = createTransport({
    resolver: createResolver(t.deps.config.dns_servers),
    mxPort: world.sink.port,
    totalConcurrency: 4,
    destinationConcurrency: 4,
    log: t.deps.log,
    ehlo: t.deps.config.hostname,
  })
  const engine = createDeliveryEngine(t.deps, {
    transport,
    signer: world.signer,
    rotation: createIpRotation(t.deps),
    commits: t.deps.commits,
    random: () => 0.5,
  })
  const created = await t.call('POST', '/api/v2/sending-domains', { key: admin.key, body: { name: 'example.com' } })
  world.zone.publishRecords(created.body.data.dns_records)
  expect((await t.call('POST', `/api/v2/sending-domains/${created.body.data.id}/verify`, { key: admin.key })).body.data.status).toBe('verified')
  const listener = await startInboundListener(t.deps, { host: '127.0.0.1', port: 0 })
  try {
    // [corpus file, the recipient it names (rewritten to one at the sink's domain), expected reason, suppressed]
    const cases: Array<[string, string, string, boolean]> = [
      ['qmail--qmail-nomailbox.eml', 'fred@example.net', 'user_unknown', true],
      ['office365--o365-351-filter.eml', 'vic@remote.example', 'policy', false],
      ['office365--o365-nodomain.eml', 'pat@contoso-gone.example', 'host_unknown', true],
      ['domino--domino-full.eml', 'kara@example.org', 'mailbox_full', false],
    ]
    for (const [file, named, reason, suppressed] of cases) {
      const to = `${named.split('@')[0]}@example.net`
      const sent = await t.call('POST', '/v1/emails', { key: admin.key, body: { from: 'Shop <news@example.com>', subject: 'Hello', text: 'Hi', to: [to] } })
      expect(sent.status).toBe(202)
      const before = world.sink.messages.length
      await engine.drain()
      const returnPath = world.sink.messages[before]!.mailFrom
      expect(await submit(listener, returnPath, corpus(file).replaceAll(named, to))).toMatch(/^250 /)
      const id = sent.body.data.id as string

      const view = (await t.call('GET', `/api/v2/messages/${id}`, { key: admin.key })).body.data
      expect(view.recipients[0], file).toMatchObject({ address: to, state: 'bounced', reason })
      const bounced = view.events.find((e: any) => e.kind === 'message.bounced')
      expect(bounced.data, file).toMatchObject({ source: 'dsn', reason, suppressed })
      const row = t.deps.db.$client.query('SELECT last_reason FROM message_recipients WHERE message_id = ?').get(id) as { last_reason: string }
      expect(row.last_reason).toBe(reason)
      const listed = t.deps.db.$client.query("SELECT count(*) AS n FROM suppressions WHERE value = ? AND reason = 'hard_bounce'").get(to) as { n: number }
      expect(listed.n, file).toBe(suppressed ? 1 : 0)
    }

    drainStats(t.deps)
    const stats = await t.call('GET', '/api/v2/stats?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&group_by=reason&kinds=message.bounced,message.sent', {
      key: admin.key,
    })
    expect(stats.status).toBe(200)
    const byReason = Object.fromEntries(stats.body.data.totals.map((x: any) => [x.group, x.counts['message.bounced']]))
    expect(byReason).toEqual({ user_unknown: 1, policy: 1, host_unknown: 1, mailbox_full: 1 })
  } finally {
    await listener.close()
    await transport.close()
  }
})
