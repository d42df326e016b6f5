import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs'

/**
 * Seals the secrets the database holds (DKIM private keys, relay and IMAP passwords,
 * webhook secrets, server HMAC secrets) with AES-256-GCM under a key that is not in the
 * database, so a copied database file or backup alone reveals none of them.
 *
 * Stored form: `enc:v1:<key id>:<nonce>:<ciphertext+tag>` (base64url parts). The key id
 * names the key (a hash of it, not the key), so a value sealed under another key is
 * recognised and refused with a clear message instead of a decryption error. GCM takes
 * a fresh random 96-bit nonce per value (NIST SP 800-38D section 8.2.2); far fewer than
 * 2^32 values are ever sealed under one key.
 */
export interface SecretBox {
  /** Id of the key new values are sealed under. */
  readonly keyId: string
  /** Seals a plaintext value for storage. */
  seal(plain: string): string
  /** Opens a stored value; a value without the `enc:` prefix (written before encryption existed) passes through. */
  open(stored: string): string
  /** Whether a stored value is sealed under the current key (false for plaintext or another key). */
  isCurrent(stored: string): boolean
}

/** A stored value that cannot be opened: sealed under a key this process does not have, or tampered with. */
export class SecretKeyError extends Error {}

const PREFIX = 'enc:v1:'
const KEY_BYTES = 32
const NONCE_BYTES = 12
const TAG_BYTES = 16

/** The id of a key: 8 bytes of SHA-256 over a label and the key, base64url (safe to show and store). */
export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update('mailroom secret key id\0').update(key).digest().subarray(0, 8).toString('base64url')
}

/** Parses a key as written in a key file or MAILROOM_SECRET_KEY: base64 (or base64url) of 32 bytes. */
export function parseSecretKey(text: string, source: string): Buffer {
  const v = text.trim()
  const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(v) ? Buffer.from(v, v.includes('-') || v.includes('_') ? 'base64url' : 'base64') : Buffer.alloc(0)
  if (key.length !== KEY_BYTES) throw new SecretKeyError(`${source}: expected the base64 form of ${KEY_BYTES} random bytes (openssl rand -base64 32)`)
  return key
}

/** A fresh random key. */
export function generateSecretKey(): Buffer {
  return randomBytes(KEY_BYTES)
}

/** Whether a stored value is in the sealed form. */
export function isSealed(stored: string): boolean {
  return stored.startsWith(PREFIX)
}

/** The key id a sealed value names, or null for plaintext. */
export function sealedKeyId(stored: string): string | null {
  return isSealed(stored) ? (stored.slice(PREFIX.length).split(':')[0] ?? null) : null
}

/** A box that seals under `primary` and opens values sealed under it or any of `older` (a rotation under way). */
export function createSecretBox(primary: Buffer, older: Buffer[] = []): SecretBox {
  const keys = new Map<string, Buffer>()
  for (const k of [primary, ...older]) keys.set(keyIdOf(k), k)
  const keyId = keyIdOf(primary)
  return {
    keyId,
    seal(plain) {
      const nonce = randomBytes(NONCE_BYTES)
      const cipher = createCipheriv('aes-256-gcm', primary, nonce)
      const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()])
      return `${PREFIX}${keyId}:${nonce.toString('base64url')}:${ct.toString('base64url')}`
    },
    open(stored) {
      if (!isSealed(stored)) return stored
      const [id = '', nonceText = '', ctText = ''] = stored.slice(PREFIX.length).split(':')
      const key = keys.get(id)
      if (!key)
        throw new SecretKeyError(
          `a secret in the database is sealed with key ${id}, but the key in use is ${keyId}: the secret key file (or MAILROOM_SECRET_KEY) is not the one this database was written with`,
        )
      const ct = Buffer.from(ctText, 'base64url')
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonceText, 'base64url'))
        decipher.setAuthTag(ct.subarray(ct.length - TAG_BYTES))
        return Buffer.concat([decipher.update(ct.subarray(0, ct.length - TAG_BYTES)), decipher.final()]).toString('utf8')
      } catch {
        throw new SecretKeyError(`a secret in the database sealed with key ${id} does not open (damaged or altered)`)
      }
    },
    isCurrent: (stored) => sealedKeyId(stored) === keyId,
  }
}

/** Writes a key file with mode 0600, flushed to disk before it is renamed into place (never a half-written key). */
export function writeKeyFile(path: string, key: Buffer): void {
  const tmp = `${path}.tmp`
  const fd = openSync(tmp, 'w', 0o600)
  try {
    writeSync(fd, key.toString('base64') + '\n')
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
}

/** Reads a key file. */
export function readKeyFile(path: string): Buffer {
  return parseSecretKey(readFileSync(path, 'utf8'), `secret key file ${path}`)
}

/**
 * The keys of a key file and its rotation companions: `<path>` is the current key;
 * `<path>.new` and `<path>.old` exist while (or after) `secrets rotate-key` runs, and
 * values sealed under them still open. Makes `<path>` (0600) when it is missing and `create`.
 */
export function loadKeyRing(path: string, create: boolean): { primary: Buffer; older: Buffer[]; created: boolean } {
  let created = false
  if (!existsSync(path)) {
    if (!create) throw new SecretKeyError(`the secret key file ${path} does not exist`)
    writeKeyFile(path, generateSecretKey())
    created = true
  }
  const older = [`${path}.new`, `${path}.old`].filter((p) => existsSync(p)).map(readKeyFile)
  return { primary: readKeyFile(path), older, created }
}
