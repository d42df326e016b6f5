import { afterAll, beforeAll } from 'bun:test'
import { generate } from 'selfsigned'
import { createSignerPool, type SignerPool } from '../../src/delivery/signer-pool'
import { startDnsServer, type DnsServer } from './dns-server'
import { startSmtpSink, type SmtpSink } from './smtp-sink'

export interface MailWorld {
  /** The recording sink: the MX of example.net. */
  sink: SmtpSink
  /** Loopback DNS: example.net's MX, mx.example.net and mailroom.test at 127.0.0.1; tests add a sending domain's records. */
  zone: DnsServer
  /** A self-signed certificate for mailroom.test (only with `certificate: true`). */
  certificate: { key: string; cert: string }
  /** One DKIM signer worker, shared by the file's engines. */
  signer: SignerPool
}

/**
 * The loopback mail world the SMTP end-to-end tests share, started once per test file by
 * bun:test hooks this registers (call it at the top level of the file). Its fields are set
 * when the file's tests run, so read them through the returned object.
 */
export function useMailWorld(opts: { certificate?: boolean } = {}): MailWorld {
  const world = { signer: createSignerPool({ size: 1 }) } as MailWorld
  beforeAll(async () => {
    world.sink = await startSmtpSink({ host: '127.0.0.1' })
    world.zone = await startDnsServer({
      zones: {
        'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
        'mx.example.net': { A: ['127.0.0.1'] },
        'mailroom.test': { A: ['127.0.0.1'] },
      },
    })
    if (opts.certificate) {
      const pems = await generate([{ name: 'commonName', value: 'mailroom.test' }], { keySize: 2048, algorithm: 'sha256' })
      world.certificate = { key: pems.private, cert: pems.cert }
    }
  })
  afterAll(async () => {
    await world.sink.close()
    await world.zone.close()
    await world.signer.close()
  })
  return world
}
