import { createHmac } from 'node:crypto'
import { createChallenge, randomInt, verifySolution, type Challenge, type Solution } from 'altcha-lib'
import { deriveKey } from 'altcha-lib/algorithms/sha'
import type { Deps } from '../../deps'
import { formSecret } from './tokens'

/**
 * The web forms' proof of work (altcha-lib, self-hosted: no third party is called). A
 * challenge is SHA-256 over salt, nonce and a secret counter drawn below
 * `web_form_challenge_max`; the browser tries counters until the key's prefix matches
 * (half the range on average), the server checks the HMAC-signed key in one step. The
 * challenge carries its form and expiry in its signed `data`, checked here against
 * `deps.clock` (the library's own expiry reads the wall clock).
 */

/** How long a challenge stays good: long enough to fill a form in. */
export const CHALLENGE_TTL_MS = 60 * 60 * 1000

/** The field of a form post that carries the solved challenge (base64 of JSON `{ challenge, solution }`). */
export const CHALLENGE_FIELD = 'altcha'

const secretsOf = (deps: Pick<Deps, 'db' | 'clock' | 'secrets'>) => {
  const base = formSecret(deps)
  const derive = (label: string) => createHmac('sha256', base).update(label).digest('hex')
  return { signature: derive('altcha:challenge'), key: derive('altcha:key') }
}

/** A new signed challenge for the form with this public id. */
export async function newChallenge(deps: Pick<Deps, 'db' | 'clock' | 'secrets' | 'config'>, publicId: string): Promise<Challenge> {
  const s = secretsOf(deps)
  return createChallenge({
    algorithm: 'SHA-256',
    cost: 1,
    deriveKey,
    counter: randomInt(deps.config.web_form_challenge_max),
    data: { form: publicId, exp: deps.clock.now() + CHALLENGE_TTL_MS },
    hmacSignatureSecret: s.signature,
    hmacKeySignatureSecret: s.key,
  })
}

export type ChallengeCheck = { ok: true; signature: string; expiresAt: number } | { ok: false; reason: string }

/** Checks a posted `altcha` value: well-formed, signed by us, for this form, not expired, solved. */
export async function checkChallenge(deps: Pick<Deps, 'db' | 'clock' | 'secrets'>, publicId: string, posted: unknown): Promise<ChallengeCheck> {
  if (typeof posted !== 'string' || posted === '' || posted.length > 4096) return { ok: false, reason: 'is missing: let the page finish its check' }
  let payload: { challenge?: Challenge; solution?: Solution }
  try {
    payload = JSON.parse(Buffer.from(posted, 'base64').toString('utf8'))
  } catch {
    return { ok: false, reason: 'is not valid' }
  }
  const { challenge, solution } = payload ?? {}
  if (!challenge?.parameters || typeof challenge.signature !== 'string' || !solution || typeof solution.derivedKey !== 'string')
    return { ok: false, reason: 'is not valid' }
  const s = secretsOf(deps)
  let verified = false
  try {
    const result = await verifySolution({ challenge, solution, deriveKey, hmacSignatureSecret: s.signature, hmacKeySignatureSecret: s.key })
    verified = result.verified
  } catch {
    verified = false
  }
  if (!verified) return { ok: false, reason: 'is not solved' }
  // Only now is `data` known to be ours (it is inside the signed parameters).
  const data = challenge.parameters.data ?? {}
  if (data.form !== publicId) return { ok: false, reason: 'belongs to another form' }
  const exp = Number(data.exp)
  if (!(exp > deps.clock.now())) return { ok: false, reason: 'has expired: reload the page' }
  return { ok: true, signature: challenge.signature, expiresAt: exp }
}
