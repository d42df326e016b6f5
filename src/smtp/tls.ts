import { X509Certificate, createPrivateKey } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Deps } from '../deps'

/**
 * The certificate of the SMTP listeners (submission and inbound).
 *
 * With `smtp_tls_cert` and `smtp_tls_key` set, those PEM files are used as they are. With
 * neither set, a self-signed certificate for `hostname` is generated on first start and kept
 * in DATA_DIR/tls/, so every later start (and both listeners) presents the same one: a client
 * that pinned it keeps working. Submission clients are usually configured to accept it
 * (nodemailer `tls.rejectUnauthorized: false`); MTAs delivering to port 25 do not verify
 * certificates at all unless the domain publishes MTA-STS or DANE (RFC 8461, RFC 7672), so a
 * self-signed certificate still gives them encryption.
 */
export interface TlsCertificate {
  key: string
  cert: string
  /** Where it came from, for the start-up log line. */
  source: 'configured' | 'generated' | 'stored'
  /** Certificate files, for the operator. */
  certPath: string
  keyPath: string
}

/** Generated certificates last ten years: nothing checks a self-signed one's dates, and an expiry would only break clients that pinned it. */
const SELF_SIGNED_YEARS = 10
/** Regenerate when fewer than this many days are left (or the host name changed). */
const RENEW_DAYS = 30

/** Raised when the configured files cannot be used; the message names the setting. */
export class TlsConfigError extends Error {}

function readPem(path: string, setting: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (e) {
    throw new TlsConfigError(`${setting}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`)
  }
}

/** Checks that the key and the certificate parse and belong together, so a mistake stops the start instead of every TLS handshake. */
function checkPair(key: string, cert: string, where: string): X509Certificate {
  let x509: X509Certificate
  try {
    x509 = new X509Certificate(cert)
  } catch {
    throw new TlsConfigError(`${where}: the certificate is not a PEM X.509 certificate`)
  }
  let privateKey: ReturnType<typeof createPrivateKey>
  try {
    privateKey = createPrivateKey(key)
  } catch {
    throw new TlsConfigError(`${where}: the private key is not a PEM private key (or it is encrypted)`)
  }
  if (!x509.checkPrivateKey(privateKey)) throw new TlsConfigError(`${where}: the private key does not match the certificate`)
  return x509
}

/**
 * Loads the SMTP listeners' certificate: the configured files, else the stored self-signed
 * one, else a new self-signed one (written to DATA_DIR/tls/ with the key readable by the
 * owner only). Throws TlsConfigError with a message for the operator.
 */
export async function loadSmtpCertificate(deps: Pick<Deps, 'config' | 'clock' | 'log'>): Promise<TlsCertificate> {
  const { smtp_tls_cert: certPath, smtp_tls_key: keyPath, data_dir, hostname } = deps.config
  if (certPath || keyPath) {
    if (!certPath || !keyPath) throw new TlsConfigError('smtp_tls_cert and smtp_tls_key must be set together')
    const cert = readPem(certPath, 'smtp_tls_cert')
    const key = readPem(keyPath, 'smtp_tls_key')
    checkPair(key, cert, `smtp_tls_cert ${certPath}`)
    return { key, cert, source: 'configured', certPath, keyPath }
  }

  const dir = join(data_dir, 'tls')
  const storedCert = join(dir, 'smtp-cert.pem')
  const storedKey = join(dir, 'smtp-key.pem')
  const now = deps.clock.now()
  if (existsSync(storedCert) && existsSync(storedKey)) {
    const cert = readFileSync(storedCert, 'utf8')
    const key = readFileSync(storedKey, 'utf8')
    let reason: string
    try {
      const x509 = checkPair(key, cert, storedCert)
      const fresh = Date.parse(x509.validTo) - now > RENEW_DAYS * 86_400_000
      if (fresh && x509.checkHost(hostname) !== undefined) return { key, cert, source: 'stored', certPath: storedCert, keyPath: storedKey }
      reason = fresh ? 'host name changed' : 'expires soon'
    } catch (e) {
      // Ours, so never worth stopping for: a crash between the two renames below leaves a new key beside the old certificate.
      reason = (e as Error).message
    }
    deps.log.info('replacing the self-signed SMTP certificate', { reason })
  }

  const notBeforeDate = new Date(now - 86_400_000) // a day of slack for clients with a slow clock
  const notAfterDate = new Date(now + SELF_SIGNED_YEARS * 365 * 86_400_000)
  // Loaded only to make a certificate (once per host name or expiry): selfsigned and its
  // X.509 stack hold about 17 MiB that a server with its certificate in place does not need (issue 18).
  const { generate } = await import('selfsigned')
  const pems = await generate([{ name: 'commonName', value: hostname }], {
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: hostname }] },
    ],
  })
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  // Written beside and renamed into place: a crash mid-write never leaves half a key.
  writeFileSync(`${storedKey}.tmp`, pems.private, { mode: 0o600 })
  chmodSync(`${storedKey}.tmp`, 0o600)
  renameSync(`${storedKey}.tmp`, storedKey)
  writeFileSync(`${storedCert}.tmp`, pems.cert, { mode: 0o644 })
  renameSync(`${storedCert}.tmp`, storedCert)
  deps.log.info('generated a self-signed SMTP certificate', { path: storedCert, hostname })
  return { key: pems.private, cert: pems.cert, source: 'generated', certPath: storedCert, keyPath: storedKey }
}
