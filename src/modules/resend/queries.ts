import { sql } from 'drizzle-orm'
import { contacts } from '../../db/schema'

/** Raw SQL of the Resend surface, kept here (CONVENTIONS.md "Storage"); portable to PostgreSQL. */

/**
 * A Resend contact is listed once, by its oldest Mailroom contact. The NOT EXISTS walks the
 * unique (list_id, email) index list by list (there is no index on the address alone).
 */
export const OLDEST_OF_ITS_ADDRESS = sql`NOT EXISTS (SELECT 1 FROM contacts AS c2 WHERE c2.list_id IN (SELECT id FROM lists) AND c2.email = ${contacts.email} AND c2.id < ${contacts.id})`
