import { randomBytes } from 'node:crypto'
import type { Deps } from '../../deps'

/**
 * A server secret kept in `system_state`, made on first use (32 random bytes). Used for the
 * HMAC of return-path tokens (src/lib/return-path-token.ts). It lives in the database with
 * the DKIM keys, so a restored backup keeps verifying the bounces of mail sent before it.
 */
export function serverSecret(deps: Pick<Deps, 'db' | 'clock'>, name: string): Buffer {
  const client = deps.db.$client
  const key = `secret:${name}`
  const found = client.query<{ value: string }, [string]>('SELECT value FROM system_state WHERE key = ?').get(key)
  if (found) return Buffer.from(found.value, 'hex')
  // INSERT OR IGNORE then read: two first uses at once agree on one secret.
  client.run('INSERT OR IGNORE INTO system_state (key, value, updated_at) VALUES (?, ?, ?)', [key, randomBytes(32).toString('hex'), deps.clock.now()])
  return Buffer.from(client.query<{ value: string }, [string]>('SELECT value FROM system_state WHERE key = ?').get(key)!.value, 'hex')
}
