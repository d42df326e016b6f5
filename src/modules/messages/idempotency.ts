import { createHash } from 'node:crypto'
import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { AppError, invalidField } from '../../lib/errors'

/**
 * Idempotency-Key for every send endpoint (docs/api.md "Idempotency"), as Stripe and Resend
 * do it: the key is scoped to the API key, remembered for 24 hours, and its record is written
 * in the same transaction as the message, so a retry after a lost response can never send
 * twice. A replay answers the first response. The same key with another body is 409
 * idempotency_key_reused; a key whose first request is still running is 409
 * idempotency_in_progress. Failed requests store nothing, so they may be retried as they are.
 */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000
export const IDEMPOTENCY_HEADER = 'idempotency-key'

export interface StoredResponse {
  status: number
  body: unknown
}

/** What a send path needs to finish an idempotent request: write `record` in its transaction. */
export interface IdempotencyClaim {
  record(db: Db, response: StoredResponse, at: number): void
  release(): void
}

export type IdempotencyStart = { kind: 'none' } | { kind: 'replay'; response: StoredResponse } | { kind: 'claimed'; claim: IdempotencyClaim }

const statements = preparedFor((db) => ({
  find: db.$client.prepare<{ request_hash: string; response_status: number; response_body: string; created_at: number }, [number, string]>(
    'SELECT request_hash, response_status, response_body, created_at FROM idempotency_keys WHERE api_key_id = ? AND key = ?',
  ),
  // REPLACE: an expired record with the same key is overwritten.
  save: db.$client.prepare<never, [number, string, string, number, string, number]>(
    'INSERT OR REPLACE INTO idempotency_keys (api_key_id, key, request_hash, response_status, response_body, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  ),
  purge: db.$client.prepare<never, [number]>('DELETE FROM idempotency_keys WHERE created_at < ?'),
}))

/** Keys whose first request is between its start and its commit, per database. */
const inFlight = new WeakMap<Db, Set<string>>()

/** JSON with sorted object keys, so the same body hashes the same whatever the key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/**
 * Starts an idempotent request. `endpoint` is part of the fingerprint, so one key used on two
 * endpoints counts as a different request.
 */
export function beginIdempotent(deps: Deps, header: string | null, apiKeyId: number, endpoint: string, body: unknown): IdempotencyStart {
  if (header === null) return { kind: 'none' }
  // RFC 9110 field values are visible ASCII; we also bound the length as Stripe does.
  if (header.length < 1 || header.length > 256 || !/^[\x21-\x7e]+$/.test(header)) {
    throw invalidField('Idempotency-Key', 'must be 1-256 visible ASCII characters')
  }
  const hash = createHash('sha256').update(endpoint).update('\n').update(canonical(body)).digest('hex')
  const slot = `${apiKeyId}\n${header}`
  let running = inFlight.get(deps.db)
  if (!running) inFlight.set(deps.db, (running = new Set()))
  if (running.has(slot)) {
    throw new AppError('idempotency_in_progress', 'A request with this Idempotency-Key is still being processed. Retry once it has finished.')
  }
  const st = statements(deps.db)
  const found = st.find.get(apiKeyId, header)
  if (found && found.created_at > deps.clock.now() - IDEMPOTENCY_TTL_MS) {
    if (found.request_hash !== hash) {
      throw new AppError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used with a different request in the last 24 hours. Use a new key for a new request.',
      )
    }
    return { kind: 'replay', response: { status: found.response_status, body: JSON.parse(found.response_body) } }
  }
  running.add(slot)
  return {
    kind: 'claimed',
    claim: {
      record: (db, response, at) => statements(db).save.run(apiKeyId, header, hash, response.status, JSON.stringify(response.body), at),
      release: () => running.delete(slot),
    },
  }
}

/** Deletes records older than 24 hours; the scheduler calls this now and then. */
export function purgeIdempotencyKeys(deps: Deps): number {
  return statements(deps.db).purge.run(deps.clock.now() - IDEMPOTENCY_TTL_MS).changes
}
