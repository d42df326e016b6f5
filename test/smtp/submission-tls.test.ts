import { describe, expect, test } from 'bun:test'
import { X509Certificate } from 'node:crypto'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { join } from 'node:path'
import { generate } from 'selfsigned'
import { startSubmissionListener } from '../../src/smtp/submission/server'
import { loadSmtpCertificate, TlsConfigError } from '../../src/smtp/tls'
import { testApp, testDeps } from '../support/app'
import { tempDir } from '../support/temp-dirs'

/** The SMTP listeners' certificate: generated once and kept, or the operator's files checked at start; and a taken port. */
describe('smtp certificate', () => {
  test('without files configured: a self-signed certificate for the host name is generated once, then reused', async () => {
    const deps = testDeps()
    const first = await loadSmtpCertificate(deps)
    expect(first.source).toBe('generated')
    expect(first.certPath).toBe(join(deps.config.data_dir, 'tls', 'smtp-cert.pem'))
    expect(statSync(first.keyPath).mode & 0o777).toBe(0o600)
    const x509 = new X509Certificate(first.cert)
    expect(x509.checkHost('mailroom.test')).toBe('mailroom.test')
    const again = await loadSmtpCertificate(deps)
    expect(again).toMatchObject({ source: 'stored', cert: first.cert, key: first.key })

    // Another host name: a new certificate, not one that names the old host.
    const renamed = await loadSmtpCertificate({ ...deps, config: { ...deps.config, hostname: 'mail.example.com' } })
    expect(renamed.source).toBe('generated')
    expect(new X509Certificate(renamed.cert).checkHost('mail.example.com')).toBe('mail.example.com')
    // Half-replaced files (a crash between the two writes) are regenerated, never fatal.
    writeFileSync(first.keyPath, (await generate(undefined, { keySize: 2048 })).private)
    expect((await loadSmtpCertificate({ ...deps, config: { ...deps.config, hostname: 'mail.example.com' } })).source).toBe('generated')
  })

  test('configured files are used as they are; missing, unpaired or mismatched ones stop the start with the setting named', async () => {
    const dir = tempDir('mailroom-tls-')
    const a = await generate([{ name: 'commonName', value: 'mail.example.com' }], { keySize: 2048 })
    const b = await generate([{ name: 'commonName', value: 'other.example.com' }], { keySize: 2048 })
    writeFileSync(join(dir, 'cert.pem'), a.cert)
    writeFileSync(join(dir, 'key.pem'), a.private)
    writeFileSync(join(dir, 'other-key.pem'), b.private)
    const withFiles = (cert: string, key: string) => {
      const deps = testDeps()
      return { ...deps, config: { ...deps.config, smtp_tls_cert: cert, smtp_tls_key: key } }
    }
    const ok = await loadSmtpCertificate(withFiles(join(dir, 'cert.pem'), join(dir, 'key.pem')))
    expect(ok).toMatchObject({ source: 'configured', cert: a.cert })
    const deps = withFiles(join(dir, 'cert.pem'), join(dir, 'key.pem'))
    expect(existsSync(join(deps.config.data_dir, 'tls'))).toBe(false)

    for (const [cert, key, message] of [
      [join(dir, 'cert.pem'), '', /set together/],
      [join(dir, 'missing.pem'), join(dir, 'key.pem'), /^smtp_tls_cert: cannot read .*missing\.pem \(ENOENT\)/],
      [join(dir, 'cert.pem'), join(dir, 'other-key.pem'), /does not match the certificate/],
      [join(dir, 'key.pem'), join(dir, 'key.pem'), /not a PEM X\.509 certificate/],
    ] as const) {
      const error = await loadSmtpCertificate(withFiles(cert, key)).then(
        () => null,
        (e: Error) => e,
      )
      expect(error).toBeInstanceOf(TlsConfigError)
      expect(error!.message).toMatch(message)
    }
    expect(readFileSync(join(dir, 'cert.pem'), 'utf8')).toBe(a.cert)
  })

  test('an address already in use fails with the setting named, and nothing is left listening', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as { port: number }).port
    const t = testApp({ smtp_listen: { host: '127.0.0.1', port: 0 }, smtp_tls_listen: { host: '127.0.0.1', port } })
    const pems = await generate(undefined, { keySize: 2048 })
    const error = await startSubmissionListener(t.deps, { certificate: { key: pems.private, cert: pems.cert } }).then(
      () => null,
      (e: Error) => e,
    )
    expect(error?.message).toBe(`smtp_tls_listen: 127.0.0.1:${port} is already in use; choose another address or "off"`)
    taken.close()
    // The STARTTLS listener that had started is closed again.
    const started = t.deps.log.lines.find((l) => l.msg === 'smtp submission listening')!.fields!.address as string
    const [host, startedPort] = started.split(':') as [string, string]
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(Number(startedPort), host)
      socket.once('connect', () => (socket.destroy(), resolve('connected')))
      socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message))
    })
    expect(refused).toBe('ECONNREFUSED')
  })
})
