import type { Deps } from '../../deps'
import type { ContactStatus } from '../../db/schema'
import { mergeFieldValues, type FieldDefinition } from '../custom-fields/values'
import { emit } from '../events/service'
import { checkContact, type CheckedContact, type ContactInput } from './check'

export type WriteResult =
  { result: 'created' | 'updated' | 'skipped'; id: number; email: string } | { result: 'invalid'; email: string | null; errors: Record<string, string[]> }

export interface RawContact {
  id: number
  list_id: number
  email: string
  first_name: string | null
  last_name: string | null
  status: ContactStatus
  fields: string
  created_at: number
  updated_at: number
}

/**
 * Emits contact.subscribed or contact.unsubscribed when a contact's status becomes one of
 * them. Pass the transaction of the change as `db`. A contact created unsubscribed (from
 * null) did not unsubscribe: only a change is an event.
 */
export function emitStatusChange(
  db: Parameters<typeof emit>[0],
  at: number,
  c: { id: number; email: string; listId: number; from: ContactStatus | null; to: ContactStatus; actorKeyId: number | null },
): void {
  if (c.from === c.to || (c.from === null && c.to !== 'subscribed')) return
  if (c.to !== 'subscribed' && c.to !== 'unsubscribed') return
  emit(db, at, {
    kind: `contact.${c.to}`,
    contact_id: c.id,
    list_id: c.listId,
    recipient: c.email,
    actor_key_id: c.actorKeyId,
    data: { email: c.email, list_id: c.listId, previous_status: c.from },
  })
}

export interface WriterOptions {
  listId: number
  defs: ReadonlyMap<string, FieldDefinition>
  /** What to do with an address already on the list. */
  mode: 'skip' | 'update'
  /** Read custom field values from text (CSV cells). */
  coerce?: boolean
  /** Emit contact.subscribed / contact.unsubscribed (API writes do; bulk imports do not, see docs/api.md). */
  emitEvents?: boolean
  actorKeyId?: number | null
  /** Chooses the status of a new contact, e.g. from a matching suppression. */
  statusForNew?: (email: string, requested: ContactStatus) => ContactStatus
  /** Told of each contact that joins the list (created subscribed, or moved to subscribed): a bulk import's drip entry. */
  onSubscribed?: (id: number) => void
}

/**
 * Writes contacts to one list with statements prepared once, so a caller can run thousands
 * of rows in one transaction (bulk import, batch add). Call `write` inside a transaction.
 */
export function createContactWriter(deps: Deps, opts: WriterOptions) {
  const client = deps.db.$client
  const find = client.prepare<RawContact, [number, string]>('SELECT * FROM contacts WHERE list_id = ? AND email = ?')
  // run() and lastInsertRowid rather than RETURNING with get(): 5-11 % of an import's insert time (measured).
  const insert = client.prepare<unknown, [number, string, string | null, string | null, string, string, number, number]>(
    'INSERT INTO contacts (list_id, email, first_name, last_name, status, fields, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (list_id, email) DO NOTHING',
  )
  const update = client.prepare<unknown, [string | null, string | null, string, string, number, number]>(
    'UPDATE contacts SET first_name = ?, last_name = ?, status = ?, fields = ?, updated_at = ? WHERE id = ?',
  )

  const statusEvent = (id: number, email: string, from: ContactStatus | null, to: ContactStatus, at: number) => {
    // The same change that emits contact.subscribed below (emitStatusChange).
    if (opts.onSubscribed && to === 'subscribed' && from !== 'subscribed') opts.onSubscribed(id)
    if (opts.emitEvents) emitStatusChange(deps.db, at, { id, email, listId: opts.listId, from, to, actorKeyId: opts.actorKeyId ?? null })
  }

  // New contacts are counted here, in the inserting transaction (no insert trigger since
  // migration 0010): one upsert per insert, or one per status at the end of a batch().
  const addCount = client.prepare<unknown, [number, string, number]>(
    'INSERT INTO contact_counts (list_id, status, n) VALUES (?, ?, ?) ON CONFLICT (list_id, status) DO UPDATE SET n = n + excluded.n',
  )
  let pending: Map<ContactStatus, number> | null = null

  const writer = {
    write(input: ContactInput): WriteResult {
      const checked = checkContact(input, opts.defs, opts.coerce)
      return checked.ok ? writer.writeChecked(checked.contact) : { result: 'invalid', email: checked.email, errors: checked.errors }
    },

    /** Writes a contact checkContact accepted (with the same definitions and `coerce`). */
    writeChecked(c: CheckedContact): WriteResult {
      // The insert and its count must commit together.
      if (!client.inTransaction) throw new Error('contact writer: write inside a transaction')
      const email = c.email
      const now = deps.clock.now()
      // Insert first: for a new address (the common case in imports) that is one index
      // probe instead of two. Only a conflict, or values that do not make a valid new
      // contact (a required field missing), read the existing one.
      if (c.newFields !== null) {
        const requested = c.status ?? 'subscribed'
        const chosen = opts.statusForNew ? opts.statusForNew(email, requested) : requested
        const inserted = insert.run(opts.listId, email, c.first_name ?? null, c.last_name ?? null, chosen, c.newFields, now, now)
        if (inserted.changes === 1) {
          const id = Number(inserted.lastInsertRowid)
          if (pending) pending.set(chosen, (pending.get(chosen) ?? 0) + 1)
          else addCount.run(opts.listId, chosen, 1)
          statusEvent(id, email, null, chosen, now)
          return { result: 'created', id, email }
        }
      }
      const current = find.get(opts.listId, email)
      if (!current) return { result: 'invalid', email, errors: c.newErrors ?? {} }
      if (opts.mode === 'skip') return { result: 'skipped', id: current.id, email }
      const merged = mergeFieldValues(opts.defs, c.fieldInput, JSON.parse(current.fields))
      if (Object.keys(merged.errors).length) return { result: 'invalid', email, errors: merged.errors }
      const next = c.status ?? current.status
      update.run(
        c.first_name === undefined ? current.first_name : c.first_name,
        c.last_name === undefined ? current.last_name : c.last_name,
        next,
        JSON.stringify(merged.values),
        now,
        current.id,
      )
      statusEvent(current.id, email, current.status, next, now)
      return { result: 'updated', id: current.id, email }
    },

    /**
     * Runs `fn` (which writes many contacts) and then adds its new contacts to
     * contact_counts with one statement per status instead of one per row. Must run inside
     * the caller's transaction, so a rollback takes the rows and the counts back together.
     * Status changes of existing contacts go through the update trigger.
     */
    batch<T>(fn: () => T): T {
      if (!client.inTransaction) throw new Error('contact writer: batch() must run inside a transaction')
      if (pending) return fn()
      pending = new Map()
      try {
        return fn()
      } finally {
        const added = pending
        pending = null
        // Also after an error: the rows written so far are counted in the same transaction,
        // whether the caller rolls it back or not. When SQLite itself has already rolled it
        // back (disk full, for one), the rows and the counts are both gone.
        if (client.inTransaction) for (const [status, n] of added) addCount.run(opts.listId, status, n)
      }
    },
  }
  return writer
}
