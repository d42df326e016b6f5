import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import { emitPrepared } from '../events/service'

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    suppress: c.prepare<never, [string, string, number]>(
      `INSERT INTO suppressions (scope, scope_key, type, value, reason, created_at) VALUES ('global', 'global', 'email', ?1, ?2, ?3)
       ON CONFLICT (scope_key, type, value) DO NOTHING`,
    ),
    markContacts: c.prepare<{ id: number; list_id: number }, [string, string, number]>(
      `UPDATE contacts SET status = ?2, updated_at = ?3 WHERE list_id IN (SELECT id FROM lists) AND email = ?1 AND status != ?2 RETURNING id, list_id`,
    ),
  }
})

/**
 * What a hard bounce or a complaint does to an address, wherever it was learnt (a live SMTP
 * reply, a DSN, an ARF report): a global suppression (the first reason stays), and the
 * address's contacts on every list get the matching status, each with a `contact.bounced` /
 * `contact.complained` event. Messages carry no list yet, so the scope is global; broadcasts
 * will narrow complaints to their list. Call it inside the transaction of the outcome.
 * Returns the contacts it changed.
 */
export function suppressForFeedback(
  db: Db,
  at: number,
  input: { address: string; cause: 'hard_bounce' | 'complaint'; messageId: string | null; data: Record<string, unknown> },
): Array<{ id: number; list_id: number }> {
  const st = statements(db)
  const status = input.cause === 'hard_bounce' ? 'bounced' : 'complained'
  st.suppress.run(input.address, input.cause, at)
  const marked = st.markContacts.all(input.address, status, at)
  for (const c of marked) {
    emitPrepared(db, at, {
      kind: `contact.${status}`,
      contact_id: c.id,
      list_id: c.list_id,
      message_id: input.messageId,
      recipient: input.address,
      data: input.data,
    })
  }
  return marked
}
