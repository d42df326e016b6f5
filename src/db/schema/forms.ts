import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { contacts } from './audience'
import { automations } from './automations'
import { createdAt, flag, ownedBy, serialId, timestamps, usesOptional } from './columns'

/** One field a web form asks besides the address: a name, or a custom field by its key. */
export interface WebFormField {
  /** `first_name`, `last_name`, or a custom field's key (its type decides the input). */
  key: string
  label: string
  required: boolean
}

/**
 * A web form (issue 16): served at /f/{public_id} and posted to by embedded copies of it.
 * `list_ids` are checked to exist when the form is saved; a list deleted later is skipped at
 * submission. `welcome_drip_id` names a drip of the automation engine (set null when it is deleted).
 */
export const webForms = sqliteTable(
  'web_forms',
  {
    id: serialId(),
    /** The unguessable id in public URLs (the integer id stays private to the API). */
    public_id: text('public_id').notNull(),
    name: text('name').notNull(),
    list_ids: text('list_ids', { mode: 'json' }).$type<number[]>().notNull(),
    fields: text('fields', { mode: 'json' }).$type<WebFormField[]>().notNull(),
    consent_text: text('consent_text').notNull(),
    /** Bumped by the API whenever consent_text changes, so a consent names the wording agreed to. */
    consent_version: integer('consent_version').notNull().default(1),
    success_message: text('success_message').notNull(),
    success_url: text('success_url'),
    failure_message: text('failure_message').notNull(),
    failure_url: text('failure_url'),
    double_opt_in: flag('double_opt_in', true),
    /** Origins (scheme://host[:port]) whose pages may post the form from a script (CORS). */
    allowed_origins: text('allowed_origins', { mode: 'json' }).$type<string[]>().notNull(),
    /** Sender and subject of the confirmation mail; null sender: the default_from setting. */
    confirmation_from: text('confirmation_from'),
    confirmation_subject: text('confirmation_subject').notNull(),
    /** A drip started for each confirmed sign-up (the automation engine reads contact.confirmed). */
    welcome_drip_id: usesOptional('welcome_drip_id', () => automations.id),
    ...timestamps(),
  },
  (t) => [uniqueIndex('web_forms_public_id_unique').on(t.public_id)],
)

/**
 * A double opt-in submission waiting for its confirmation: no contact exists yet. The link's
 * token is an HMAC over (id, expires_at), so it needs no stored secret per row; a confirmed
 * row keeps `confirmed_at` so a second press says "already confirmed".
 */
export const webFormSubmissions = sqliteTable(
  'web_form_submissions',
  {
    id: serialId(),
    form_id: ownedBy('form_id', () => webForms.id),
    email: text('email').notNull(),
    /** What the form asked: first_name, last_name, fields (custom values as submitted, checked again on confirming). */
    data: text('data', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    consent_text: text('consent_text').notNull(),
    consent_version: integer('consent_version').notNull(),
    ip: text('ip'),
    user_agent: text('user_agent'),
    created_at: createdAt(),
    expires_at: integer('expires_at').notNull(),
    confirmed_at: integer('confirmed_at'),
  },
  (t) => [index('web_form_submissions_expires_idx').on(t.expires_at)],
)

/**
 * Proof of consent per contact (GDPR art. 7(1): the controller must be able to show it): the
 * wording and its version, when, from which address and browser. For double opt-in,
 * `confirmed_at` is the press of the confirm button; `ip` and `user_agent` are the
 * confirming request's.
 */
export const consents = sqliteTable(
  'consents',
  {
    id: serialId(),
    contact_id: ownedBy('contact_id', () => contacts.id),
    form_id: usesOptional('form_id', () => webForms.id),
    text: text('text').notNull(),
    version: integer('version').notNull(),
    ip: text('ip'),
    user_agent: text('user_agent'),
    /** When the form was submitted. */
    created_at: createdAt(),
    confirmed_at: integer('confirmed_at'),
  },
  (t) => [index('consents_contact_idx').on(t.contact_id), index('consents_form_idx').on(t.form_id)],
)
