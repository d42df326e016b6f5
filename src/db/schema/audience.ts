import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { counter, createdAt, flag, ownedBy, serialId, timestamps } from './columns'
import { CONTACT_STATUSES, CUSTOM_FIELD_TYPES } from './audience-values'

export * from './audience-values'

export const lists = sqliteTable('lists', {
  id: serialId(),
  name: text('name').notNull(),
  description: text('description').notNull().default(''),
  ...timestamps(),
})

/**
 * A contact is one address on one list (spec "Contact": `list_id` is a field of the
 * contact), so the same address on two lists is two contacts with their own status.
 * `email` is stored normalised (trimmed, lower case); custom field values live in `fields`
 * as JSON keyed by the custom field's key.
 */
export const contacts = sqliteTable(
  'contacts',
  {
    id: serialId(),
    list_id: ownedBy('list_id', () => lists.id),
    email: text('email').notNull(),
    first_name: text('first_name'),
    last_name: text('last_name'),
    status: text('status', { enum: CONTACT_STATUSES }).notNull(),
    fields: text('fields', { mode: 'json' })
      .$type<Record<string, unknown>>()
      .notNull()
      .default(sql`'{}'`),
    ...timestamps(),
  },
  (t) => [
    // Also serves lookups by address across lists (`list_id IN (SELECT id FROM lists) AND
    // email ...`: one probe per list). A separate email index would take random-order
    // inserts too, and cost a third of a million-contact import's time (measured).
    uniqueIndex('contacts_list_email_unique').on(t.list_id, t.email),
    // Each index ends in the rowid (= id), so "WHERE list_id = ? [AND status = ?] ORDER BY id" walks one index.
    index('contacts_list_idx').on(t.list_id),
    index('contacts_list_status_idx').on(t.list_id, t.status),
    // Serves status filters and "status and created since" segments in one range scan, and
    // creation-time segments as one range per status (the rule compiler names every status):
    // a separate created_at index cost 10 % of a bulk import's insert time (measured).
    index('contacts_status_created_idx').on(t.status, t.created_at),
  ],
)

/**
 * Contacts per (list, status), kept exact so list counts and the totals of list/status
 * listings do not count a million index entries per request. Deletes and changes of list or
 * status move the counts by trigger (migration 0003); inserts are counted by the one writer
 * of new contacts, createContactWriter, in the inserting transaction (migration 0010: a
 * per-row insert trigger cost a fifth to a quarter of a bulk import's insert time).
 */
export const contactCounts = sqliteTable(
  'contact_counts',
  {
    list_id: integer('list_id').notNull(),
    status: text('status', { enum: CONTACT_STATUSES }).notNull(),
    n: integer('n').notNull(),
  },
  (t) => [primaryKey({ columns: [t.list_id, t.status] })],
)

export const customFields = sqliteTable(
  'custom_fields',
  {
    id: serialId(),
    /** The name in `fields` of a contact and in segment rules: lower snake case. */
    key: text('key').notNull(),
    name: text('name').notNull(),
    type: text('type', { enum: CUSTOM_FIELD_TYPES }).notNull(),
    /** Allowed values of a one_of field. */
    options: text('options', { mode: 'json' })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    required: flag('required', false),
    /** JSON value used when a contact is created without one; null for none. */
    default_value: text('default_value', { mode: 'json' }).$type<unknown>(),
    ...timestamps(),
  },
  (t) => [uniqueIndex('custom_fields_key_unique').on(t.key)],
)

export const segments = sqliteTable('segments', {
  id: serialId(),
  name: text('name').notNull(),
  description: text('description').notNull().default(''),
  /** The rule tree: { all | any: [condition | group, ...] }; see src/modules/segments. */
  rules: text('rules', { mode: 'json' }).$type<unknown>().notNull(),
  /**
   * An indexed segment's rules as the WHERE of its partial index `segment_members_<id>` on
   * contacts, parameters written in (rules.ts inlineParams); null when not indexed. The
   * index is created, replaced and dropped with this column, in the same transaction.
   */
  index_where: text('index_where'),
  ...timestamps(),
})

export const SUPPRESSION_SCOPES = ['global', 'list', 'program'] as const
export const SUPPRESSION_TYPES = ['email', 'domain'] as const
export const PROGRAM_TYPES = ['broadcast', 'drip', 'trigger'] as const

/**
 * Addresses or whole domains that must not be sent to: everywhere (global), for one list,
 * or for one program (a broadcast, drip or trigger). `value` is normalised lower case.
 */
export const suppressions = sqliteTable(
  'suppressions',
  {
    id: serialId(),
    scope: text('scope', { enum: SUPPRESSION_SCOPES }).notNull(),
    /** `global`, `list:<id>` or `program:<type>:<id>`: one column so that uniqueness is a plain index. */
    scope_key: text('scope_key').notNull(),
    list_id: integer('list_id').references(() => lists.id, { onDelete: 'cascade' }),
    program_type: text('program_type', { enum: PROGRAM_TYPES }),
    program_id: integer('program_id'),
    type: text('type', { enum: SUPPRESSION_TYPES }).notNull(),
    value: text('value').notNull(),
    reason: text('reason').notNull(),
    created_at: createdAt(),
  },
  (t) => [
    uniqueIndex('suppressions_entry_unique').on(t.scope_key, t.type, t.value),
    index('suppressions_value_idx').on(t.value, t.type),
    // Deleting a list cascades to its suppressions; without this that is a full scan.
    index('suppressions_list_idx').on(t.list_id),
    index('suppressions_created_idx').on(t.created_at),
  ],
)

export const IMPORT_STATUSES = ['queued', 'running', 'completed', 'failed'] as const

/**
 * A bulk import is its own durable job: the file sits in the data directory, and every
 * batch of rows commits together with `bytes_done` and the counters, so a restart resumes
 * from the last committed batch and never counts a row twice.
 */
export const imports = sqliteTable(
  'imports',
  {
    id: serialId(),
    list_id: ownedBy('list_id', () => lists.id),
    format: text('format', { enum: ['csv', 'jsonl'] }).notNull(),
    mode: text('mode', { enum: ['skip', 'update'] }).notNull(),
    /** Contact attribute or `fields.<key>` -> source column (CSV header or JSON key). */
    mapping: text('mapping', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    /** Start the list's drips for the contacts the import subscribes (issue 16); false: import only. */
    enroll: flag('enroll', true),
    status: text('status', { enum: IMPORT_STATUSES }).notNull(),
    file_path: text('file_path').notNull(),
    file_bytes: integer('file_bytes').notNull(),
    bytes_done: counter('bytes_done'),
    total_rows: integer('total_rows'),
    rows_done: counter('rows_done'),
    created: counter('created'),
    updated: counter('updated'),
    skipped: counter('skipped'),
    invalid: counter('invalid'),
    error: text('error'),
    created_at: createdAt(),
    started_at: integer('started_at'),
    finished_at: integer('finished_at'),
  },
  (t) => [index('imports_status_idx').on(t.status)],
)

export const importErrors = sqliteTable(
  'import_errors',
  {
    id: serialId(),
    import_id: ownedBy('import_id', () => imports.id),
    /** 1-based data row number (the header is not counted). */
    row_number: integer('row_number').notNull(),
    reason: text('reason').notNull(),
    /** The source row as it was read. */
    raw: text('raw').notNull(),
  },
  (t) => [index('import_errors_import_idx').on(t.import_id, t.row_number)],
)
