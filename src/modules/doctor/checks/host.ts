import { X509Certificate } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../../../config'
import { publicHostNameProblem } from '../../../lib/public-host-name'
import type { CheckResult } from '../model'
import type { DoctorDns } from './dns'
import { result } from './result'

/** The server's host name is a public FQDN (lib/public-host-name.ts) and resolves: EHLO, SPF `a:` and the return-path CNAME use it. */
export async function checkHostName(config: Readonly<Config>, dns: DoctorDns): Promise<CheckResult> {
  const title = 'The host name is a public, fully qualified name'
  const name = config.hostname
  const fix = `Set hostname (MAILROOM_HOSTNAME, --hostname) to this server's public name, such as mail.example.com, and publish A mail.example.com -> its public address.`
  const problem = publicHostNameProblem(name)
  if (problem) return result('host', 'host.fqdn', name, title, 'fail', `The server's host name ${problem}.`, fix)
  const addresses = await dns.addresses(name)
  if (addresses.length === 0)
    return result(
      'host',
      'host.fqdn',
      name,
      title,
      'fail',
      `${name} does not resolve (no A or AAAA record).`,
      `Publish A ${name} -> this server's public address.`,
    )
  return result('host', 'host.fqdn', name, title, 'pass', `${name} resolves to ${addresses.join(', ')}.`)
}

/**
 * The SMTP listeners' certificate (smtp/tls.ts: configured files, or the one generated into
 * DATA_DIR/tls) must name the host name: MTA-STS senders (RFC 8461 section 4.2) and
 * submission clients verify it. Read from the file so this module does not reach into smtp/.
 */
export function checkCertificate(config: Readonly<Config>, now: number): CheckResult {
  const title = 'The TLS certificate covers the host name'
  const name = config.hostname
  const path = config.smtp_tls_cert || join(config.data_dir, 'tls', 'smtp-cert.pem')
  const fix = `Get a certificate for ${name} from a public CA (e.g. Let's Encrypt with certbot certonly -d ${name}) and set smtp_tls_cert and smtp_tls_key to its files.`
  // The server writes its self-signed one there at the first start of an SMTP listener (smtp/tls.ts).
  if (!existsSync(path))
    return result('host', 'host.tls', name, title, 'skipped', `No certificate at ${path} yet: one is made when an SMTP listener first starts.`)
  let cert: X509Certificate
  try {
    cert = new X509Certificate(readFileSync(path))
  } catch (e) {
    return result('host', 'host.tls', name, title, 'fail', `${path} is not a PEM certificate (${(e as Error).message}).`, fix)
  }
  if (cert.checkHost(name) === undefined)
    return result('host', 'host.tls', name, title, 'fail', `The certificate in ${path} is for ${cert.subjectAltName ?? cert.subject}, not ${name}.`, fix)
  if (Date.parse(cert.validTo) < now) return result('host', 'host.tls', name, title, 'fail', `The certificate in ${path} expired on ${cert.validTo}.`, fix)
  if (cert.checkIssued(cert))
    return result(
      'host',
      'host.tls',
      name,
      title,
      'warn',
      `The certificate covers ${name} but is self-signed: senders that verify (MTA-STS, submission clients) refuse it.`,
      fix,
    )
  return result('host', 'host.tls', name, title, 'pass', `The certificate covers ${name} until ${cert.validTo}.`)
}

/** The host of tracking links and unsubscribe pages (public_url) must resolve publicly, or every click and one-click unsubscribe fails. */
export async function checkTrackingHost(config: Readonly<Config>, dns: DoctorDns): Promise<CheckResult> {
  const title = 'The tracking and unsubscribe host resolves'
  const host = new URL(config.public_url).hostname.replace(/^\[|\]$/g, '')
  const fix = `Set public_url (MAILROOM_PUBLIC_URL) to an https URL on a public name that reaches this server, such as https://${config.hostname}, and publish its A record.`
  const problem = publicHostNameProblem(host)
  if (problem) return result('host', 'host.tracking', host, title, 'fail', `Links in mail point to ${config.public_url}: ${problem}.`, fix)
  const addresses = await dns.addresses(host)
  if (addresses.length === 0) return result('host', 'host.tracking', host, title, 'fail', `${host} (public_url) does not resolve.`, fix)
  return result('host', 'host.tracking', host, title, 'pass', `${host} resolves to ${addresses.join(', ')}.`)
}
