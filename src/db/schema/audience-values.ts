/**
 * The closed sets of values of the audience tables, apart from the table definitions: the
 * import's worker thread checks rows against them without loading drizzle and every table
 * (10 MiB less for the worker, measured; issue 18).
 */

/** Contact statuses; docs/api.md says what each means and how it moves. */
export const CONTACT_STATUSES = ['subscribed', 'unconfirmed', 'unsubscribed', 'bounced', 'complained'] as const
export type ContactStatus = (typeof CONTACT_STATUSES)[number]

export const CUSTOM_FIELD_TYPES = ['text', 'number', 'date', 'boolean', 'one_of'] as const
export type CustomFieldType = (typeof CUSTOM_FIELD_TYPES)[number]
