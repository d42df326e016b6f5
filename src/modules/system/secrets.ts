import { randomBytes } from 'node:crypto'
import type { Deps } from '../../deps'
import type { SecretBox } from '../../lib/secret-box'

/**
 * Every secret the database holds, sealed by `deps.secrets` (src/lib/secret-box.ts). A new
 * secret column goes here, or a copied database reveals it: `sealStoredSecrets` and key
 * rotation walk this list. Each entry names the row key column and, for shared tables,
 * the rows that are secrets.
 */
export const SECRET_COLUMNS = [
  { table: 'sending_domains', id: 'id', column: 'dkim_private_key', where: '' },
  { table: 'sending_nodes', id: 'id', column: 'relay_password', where: '' },
  { table: 'feedback_loop_accounts', id: 'id', column: 'imap_password', where: '' },
  { table: 'webhooks', id: 'id', column: 'secret', where: '' },
  { table: 'webhooks', id: 'id', column: 'previous_secret', where: '' },
  { table: 'system_state', id: 'key', column: 'value', where: "AND key LIKE 'secret:%'" },
] as const

/**
 * Seals, under the box's current key, every stored secret that is not yet: plaintext from
 * before encryption existed, or values under an older key (key rotation, or one that was
 * interrupted). One transaction, so a crash leaves all of them as they were. Idempotent:
 * returns how many values changed. With secure_delete on for the sweep, SQLite zeroes the
 * space the old values leave (https://sqlite.org/pragma.html#pragma_secure_delete), so the
 * plaintext does not linger in free pages of the file.
 */
export function sealStoredSecrets(deps: Pick<Deps, 'db'>, box: SecretBox): number {
  const client = deps.db.$client
  const previous = Number(Object.values(client.query('PRAGMA secure_delete').get() as object)[0])
  client.run('PRAGMA secure_delete = ON')
  let changed = 0
  try {
    client.transaction(() => {
      for (const s of SECRET_COLUMNS) {
        const rows = client
          .query<{ id: string | number; value: string }, []>(
            `SELECT ${s.id} AS id, ${s.column} AS value FROM ${s.table} WHERE ${s.column} IS NOT NULL ${s.where}`,
          )
          .all()
        const update = client.prepare(`UPDATE ${s.table} SET ${s.column} = ? WHERE ${s.id} = ?`)
        for (const r of rows) {
          if (box.isCurrent(r.value)) continue
          update.run(box.seal(box.open(r.value)), r.id)
          changed++
        }
      }
    })()
  } finally {
    client.run(`PRAGMA secure_delete = ${previous ? 'ON' : 'OFF'}`)
  }
  return changed
}

/** Whether any stored secret is sealed (then a missing key file is a mistake, never a reason to make a new key). */
export function hasSealedSecrets(deps: Pick<Deps, 'db'>): boolean {
  const client = deps.db.$client
  return SECRET_COLUMNS.some((s) => client.query(`SELECT 1 FROM ${s.table} WHERE ${s.column} LIKE 'enc:%' ${s.where} LIMIT 1`).get() !== null)
}

/**
 * A server secret kept in `system_state`, made on first use (32 random bytes), sealed like
 * the other secrets. Used for the HMAC of return-path tokens (src/lib/return-path-token.ts) and tracking
 * links. It lives in the database with the DKIM keys, so a restored backup (with its key)
 * keeps verifying the bounces of mail sent before it.
 */
export function serverSecret(deps: Pick<Deps, 'db' | 'clock' | 'secrets'>, name: string): Buffer {
  const client = deps.db.$client
  const key = `secret:${name}`
  const read = () => client.query<{ value: string }, [string]>('SELECT value FROM system_state WHERE key = ?').get(key)
  const found = read()
  if (found) return Buffer.from(deps.secrets.open(found.value), 'hex')
  // INSERT OR IGNORE then read: two first uses at once agree on one secret.
  client.run('INSERT OR IGNORE INTO system_state (key, value, updated_at) VALUES (?, ?, ?)', [
    key,
    deps.secrets.seal(randomBytes(32).toString('hex')),
    deps.clock.now(),
  ])
  return Buffer.from(deps.secrets.open(read()!.value), 'hex')
}
