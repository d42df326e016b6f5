import { randomBytes } from 'node:crypto'
import { and, eq, inArray, isNull, lt } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { bulkDeleteByIds, findById, pageOfTable, timestampsOf, type BulkDeleteOutcome } from '../../db/crud'
import { automations, consents, contacts, lists, webFormSubmissions, webForms, type ContactStatus, type WebFormField } from '../../db/schema'
import { AppError, type ErrorDetails } from '../../lib/errors'
import { fieldDefinitions } from '../custom-fields/service'
import type { FieldDefinition } from '../custom-fields/values'
import { checkContact } from '../contacts/check'
import { createContactWriter } from '../contacts/writer'
import { emit } from '../events/service'
import { mailboxProblem } from '../messages/compose'
import { acceptMessages, prepareMessages, type AcceptContext } from '../messages/service'
import { RESERVED_INPUTS, type WebFormInput, type WebFormPatch, type WebFormView } from './model'
import { confirmationMail, embedSnippet, hostedPage } from './pages'
import { signConfirmToken, verifyConfirmToken } from './tokens'

type Row = typeof webForms.$inferSelect
type SubmissionRow = typeof webFormSubmissions.$inferSelect

const DEFAULTS = {
  success_double: 'Thanks! Check your inbox and confirm your address to finish subscribing.',
  success_single: 'Thanks for subscribing!',
  failure: 'Sorry, we could not subscribe you. Check the form and try again.',
  subject: 'Confirm your subscription',
}

const NAME_FIELDS = ['first_name', 'last_name']

/** "first_name" -> "First name": a label for a field the form's author left unlabelled. */
export const labelOf = (key: string) => (key.charAt(0).toUpperCase() + key.slice(1)).replace(/_/g, ' ')

const newPublicId = () => randomBytes(12).toString('base64url')

const invalid = (details: ErrorDetails) => new AppError('validation_failed', 'The request data is invalid.', details)

/** The origin of an allowed-origins entry ("https://example.com"), or null when it is not one. */
function originOf(text: string): string | null {
  try {
    const url = new URL(text)
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== text.replace(/\/$/, '')) return null
    return url.origin
  } catch {
    return null
  }
}

/** The hosted page's address. */
export const hostedUrl = (deps: Pick<Deps, 'config'>, publicId: string) => `${deps.config.public_url}/f/${publicId}`

function toView(deps: Deps, r: Row, defs: ReadonlyMap<string, FieldDefinition>): WebFormView {
  return {
    id: r.id,
    public_id: r.public_id,
    name: r.name,
    list_ids: r.list_ids,
    fields: r.fields,
    consent_text: r.consent_text,
    consent_version: r.consent_version,
    success_message: r.success_message,
    success_url: r.success_url,
    failure_message: r.failure_message,
    failure_url: r.failure_url,
    double_opt_in: r.double_opt_in,
    allowed_origins: r.allowed_origins,
    confirmation_from: r.confirmation_from,
    confirmation_subject: r.confirmation_subject,
    welcome_drip_id: r.welcome_drip_id,
    hosted_url: hostedUrl(deps, r.public_id),
    embed_html: embedSnippet(deps.config.public_url, r, defs),
    ...timestampsOf(r),
  }
}

const views = (deps: Deps) => (rows: Row[]) => {
  const defs = fieldDefinitions(deps)
  return rows.map((r) => toView(deps, r, defs))
}

/**
 * Checks a form as it would be saved: its lists exist, its fields are names or custom fields
 * (each once), its origins are origins, and a double opt-in form has a sender. Every problem
 * in one 422.
 */
function checkForm(deps: Deps, f: Omit<Row, 'id' | 'public_id' | 'created_at' | 'updated_at' | 'consent_version'>): void {
  const errors: ErrorDetails = {}
  const add = (field: string, message: string) => (errors[field] ??= []).push(message)
  const unique = [...new Set(f.list_ids)]
  const found = new Set(
    deps.db
      .select({ id: lists.id })
      .from(lists)
      .where(inArray(lists.id, unique))
      .all()
      .map((r) => r.id),
  )
  const missing = unique.filter((id) => !found.has(id))
  if (missing.length) add('list_ids', `no list with id ${missing.join(', ')}`)
  const defs = fieldDefinitions(deps)
  const seen = new Set<string>()
  f.fields.forEach((field, i) => {
    if ((RESERVED_INPUTS as readonly string[]).includes(field.key)) add(`fields.${i}.key`, `${field.key} is asked by every form (or reserved); leave it out`)
    else if (!NAME_FIELDS.includes(field.key) && !defs.has(field.key)) add(`fields.${i}.key`, `must be first_name, last_name or the key of a custom field`)
    if (seen.has(field.key)) add(`fields.${i}.key`, `${field.key} is asked twice`)
    seen.add(field.key)
  })
  // A required custom field the form does not ask would make every new contact invalid.
  for (const def of defs.values()) {
    if (def.required && (def.default_value === null || def.default_value === undefined) && !f.fields.some((x) => x.key === def.key && x.required))
      add('fields', `the custom field ${def.key} is required for every contact: ask it, as required`)
  }
  f.allowed_origins.forEach((o, i) => {
    if (!originOf(o)) add(`allowed_origins.${i}`, 'must be an origin such as https://example.com (scheme and host, no path)')
  })
  if (f.confirmation_from) {
    const problem = mailboxProblem(f.confirmation_from)
    if (problem) add('confirmation_from', problem)
  } else if (f.double_opt_in && !deps.config.default_from) {
    add('confirmation_from', 'is required for double opt-in: give it, or set default_from in the server configuration')
  }
  if (f.welcome_drip_id != null) {
    const drip = deps.db.select({ kind: automations.kind }).from(automations).where(eq(automations.id, f.welcome_drip_id)).get()
    if (drip?.kind !== 'drip') add('welcome_drip_id', `no drip with id ${f.welcome_drip_id}`)
  }
  if (Object.keys(errors).length) throw invalid(errors)
}

const fieldsOf = (fields: WebFormInput['fields']): WebFormField[] =>
  (fields ?? []).map((f) => ({ key: f.key, label: f.label?.trim() || labelOf(f.key), required: f.required ?? false }))

/** A web form's view (404 when there is none). */
export function getWebForm(deps: Deps, id: number): WebFormView {
  return views(deps)([findById(deps.db, webForms, id, 'web form')])[0]!
}

/** A page of web forms, oldest first. */
export function listWebForms(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, webForms, query, views(deps))
}

/** Creates a web form with a new public id. */
export function createWebForm(deps: Deps, input: WebFormInput): WebFormView {
  const doubleOptIn = input.double_opt_in ?? true
  const values = {
    name: input.name.trim(),
    list_ids: [...new Set(input.list_ids)],
    fields: fieldsOf(input.fields),
    consent_text: input.consent_text.trim(),
    success_message: input.success_message?.trim() || (doubleOptIn ? DEFAULTS.success_double : DEFAULTS.success_single),
    success_url: input.success_url ?? null,
    failure_message: input.failure_message?.trim() || DEFAULTS.failure,
    failure_url: input.failure_url ?? null,
    double_opt_in: doubleOptIn,
    allowed_origins: (input.allowed_origins ?? []).map((o) => o.replace(/\/$/, '')),
    confirmation_from: input.confirmation_from?.trim() || null,
    confirmation_subject: input.confirmation_subject?.trim() || DEFAULTS.subject,
    welcome_drip_id: input.welcome_drip_id ?? null,
  }
  checkForm(deps, values)
  const now = deps.clock.now()
  const row = deps.db
    .insert(webForms)
    .values({ ...values, public_id: newPublicId(), created_at: now, updated_at: now })
    .returning()
    .get()
  return views(deps)([row])[0]!
}

/** Changes a web form; a new consent wording gets the next consent version. */
export function updateWebForm(deps: Deps, id: number, patch: WebFormPatch): WebFormView {
  const current = findById(deps.db, webForms, id, 'web form')
  const next = {
    name: patch.name?.trim() ?? current.name,
    list_ids: patch.list_ids ? [...new Set(patch.list_ids)] : current.list_ids,
    fields: patch.fields ? fieldsOf(patch.fields) : current.fields,
    consent_text: patch.consent_text?.trim() ?? current.consent_text,
    success_message: patch.success_message !== undefined ? patch.success_message.trim() || current.success_message : current.success_message,
    success_url: patch.success_url !== undefined ? patch.success_url : current.success_url,
    failure_message: patch.failure_message !== undefined ? patch.failure_message.trim() || current.failure_message : current.failure_message,
    failure_url: patch.failure_url !== undefined ? patch.failure_url : current.failure_url,
    double_opt_in: patch.double_opt_in ?? current.double_opt_in,
    allowed_origins: patch.allowed_origins ? patch.allowed_origins.map((o) => o.replace(/\/$/, '')) : current.allowed_origins,
    confirmation_from: patch.confirmation_from !== undefined ? patch.confirmation_from?.trim() || null : current.confirmation_from,
    confirmation_subject: patch.confirmation_subject?.trim() || current.confirmation_subject,
    welcome_drip_id: patch.welcome_drip_id !== undefined ? patch.welcome_drip_id : current.welcome_drip_id,
  }
  checkForm(deps, next)
  deps.db
    .update(webForms)
    .set({
      ...next,
      consent_version: next.consent_text !== current.consent_text ? current.consent_version + 1 : current.consent_version,
      updated_at: deps.clock.now(),
    })
    .where(eq(webForms.id, id))
    .run()
  return getWebForm(deps, id)
}

/** Deletes web forms with their pending submissions; consents stay with their contacts (form_id set null). */
export function deleteWebForms(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, webForms, ids)
}

/** The form with this public id, or null. */
export function findPublicForm(deps: Deps, publicId: string): Row | null {
  return deps.db.select().from(webForms).where(eq(webForms.public_id, publicId)).get() ?? null
}

/** The custom field definitions a form's page needs. */
export const formDefinitions = (deps: Deps) => fieldDefinitions(deps)

/** Who sent a submission or pressed a confirm button. */
export interface ClientInfo {
  ip: string | null
  user_agent: string | null
}

/** What a visitor gets back; the same whether or not the address was on a list already. */
export type SubmitOutcome = { kind: 'subscribed' } | { kind: 'pending' }

/**
 * The contact a submission describes, from the posted values: the address, the asked names
 * and custom fields (text, as a form posts them), checked against the definitions. Fields the
 * form does not ask are ignored, so a post cannot set what the form's author did not offer.
 */
function contactInput(
  form: Row,
  body: Record<string, unknown>,
): { email: unknown; first_name?: unknown; last_name?: unknown; fields: Record<string, unknown> } {
  const out: { email: unknown; first_name?: unknown; last_name?: unknown; fields: Record<string, unknown> } = { email: body.email, fields: {} }
  const nested = typeof body.fields === 'object' && body.fields !== null ? (body.fields as Record<string, unknown>) : {}
  for (const f of form.fields) {
    const raw = body[f.key] ?? nested[f.key]
    const value = typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : raw
    if (f.key === 'first_name' || f.key === 'last_name') {
      if (typeof value === 'string' && value.trim() !== '') out[f.key] = value
    } else if (typeof value === 'string' && value.trim() !== '') out.fields[f.key] = value
  }
  return out
}

/** Checks a submission's values; every problem in one 422 (the field names are the form's input names). */
function checkSubmission(deps: Deps, form: Row, body: Record<string, unknown>) {
  const defs = fieldDefinitions(deps)
  const input = contactInput(form, body)
  const errors: ErrorDetails = {}
  for (const f of form.fields) {
    const present = f.key === 'first_name' || f.key === 'last_name' ? input[f.key] !== undefined : input.fields[f.key] !== undefined
    if (f.required && !present) errors[f.key] = ['is required']
  }
  const checked = checkContact(input, defs, true)
  if (!checked.ok) for (const [k, v] of Object.entries(checked.errors)) errors[k.replace(/^fields\./, '')] = v
  const consent = body.consent
  if (consent === undefined || consent === null || consent === '' || consent === false || consent === 'false')
    errors.consent = ['must be given: tick the box to agree']
  if (Object.keys(errors).length || !checked.ok) throw invalid(errors)
  return { input, email: checked.contact.email, defs }
}

/**
 * Subscribes the address on each of the form's lists through the one contact writer (so
 * counts and `contact.subscribed` events are as for any API write), records the consent per
 * contact, and emits `contact.confirmed` for a double opt-in. Bounced and complained
 * contacts keep their status: a form cannot undo what the mail system learned. Call inside a
 * transaction.
 */
function subscribe(
  deps: Deps,
  form: Row,
  input: ReturnType<typeof contactInput>,
  consent: { text: string; version: number; ip: string | null; user_agent: string | null; created_at: number; confirmed_at: number | null },
  defs: ReadonlyMap<string, FieldDefinition>,
): void {
  const now = deps.clock.now()
  const email = checkContact(input, defs, true)
  if (!email.ok) throw invalid(email.errors)
  const listIds = deps.db.select({ id: lists.id }).from(lists).where(inArray(lists.id, form.list_ids)).all()
  for (const { id: listId } of listIds) {
    const existing = deps.db
      .select({ status: contacts.status })
      .from(contacts)
      .where(and(eq(contacts.list_id, listId), eq(contacts.email, email.contact.email)))
      .get()
    const keep: ContactStatus[] = ['bounced', 'complained']
    const status: ContactStatus = existing && keep.includes(existing.status) ? existing.status : 'subscribed'
    const writer = createContactWriter(deps, { listId, defs, mode: 'update', coerce: true, emitEvents: true })
    const result = writer.write({ ...input, status })
    if (result.result === 'invalid') throw invalid(result.errors)
    if (result.result === 'skipped') continue
    deps.db
      .insert(consents)
      .values({ contact_id: result.id, form_id: form.id, ...consent })
      .run()
    if (consent.confirmed_at !== null)
      emit(deps.db, now, {
        kind: 'contact.confirmed',
        contact_id: result.id,
        list_id: listId,
        recipient: result.email,
        data: { email: result.email, list_id: listId, form_id: form.id, welcome_drip_id: form.welcome_drip_id },
      })
  }
}

/**
 * Takes a checked-in submission (honeypot and challenge already passed): without double
 * opt-in the address is subscribed at once; with it, a pending submission is stored and the
 * confirmation mail queued through the accept service. Either way the answer is the same
 * for a new address and for one already on the lists.
 */
export async function submitForm(deps: Deps, form: Row, body: Record<string, unknown>, client: ClientInfo): Promise<SubmitOutcome> {
  const { input, email, defs } = checkSubmission(deps, form, body)
  const now = deps.clock.now()
  if (!form.double_opt_in) {
    deps.db.transaction(() =>
      subscribe(deps, form, input, { text: form.consent_text, version: form.consent_version, ...client, created_at: now, confirmed_at: null }, defs),
    )
    return { kind: 'subscribed' }
  }
  const expiresAt = now + deps.config.web_form_token_days * 86_400_000
  const from = form.confirmation_from ?? deps.config.default_from
  const ctx: AcceptContext = { source: 'web_form', apiKeyId: null }
  let submission: SubmissionRow | null = null
  await acceptMessages(deps, {
    ctx,
    prepare: () => {
      // The row first, in its own commit: the mail's link names it. A mail that then fails to
      // queue leaves a pending row nobody can confirm, swept when it expires.
      submission = deps.db.transaction(() => {
        // Expired pending rows are swept here, a few at a time, rather than by a timer.
        deps.db.delete(webFormSubmissions).where(lt(webFormSubmissions.expires_at, now)).run()
        return deps.db
          .insert(webFormSubmissions)
          .values({
            form_id: form.id,
            email,
            data: { first_name: input.first_name, last_name: input.last_name, fields: input.fields },
            consent_text: form.consent_text,
            consent_version: form.consent_version,
            ip: client.ip,
            user_agent: client.user_agent,
            created_at: now,
            expires_at: expiresAt,
          })
          .returning()
          .get()
      })
      const link = `${deps.config.public_url}/f/confirm/${signConfirmToken(deps, submission.id, expiresAt)}`
      const mail = confirmationMail({ formName: form.name, link, expiresAt })
      return prepareMessages(
        deps,
        [
          {
            from,
            to: [email],
            subject: form.confirmation_subject,
            text: mail.text,
            html: mail.html,
            tags: ['web-form'],
            track_opens: false,
            track_clicks: false,
          },
        ],
        ctx,
      )
    },
    respond: () => ({ status: 202, body: null }),
  })
  return { kind: 'pending' }
}

export type ConfirmState =
  | { kind: 'invalid' }
  | { kind: 'expired' }
  | { kind: 'confirmed'; form: Row; submission: SubmissionRow }
  | { kind: 'pending'; form: Row; submission: SubmissionRow }

/** What a confirmation link points at: not valid (tampered, or its form deleted), expired, already confirmed, or pending. */
export function confirmState(deps: Deps, token: string): ConfirmState {
  const t = verifyConfirmToken(deps, token)
  if (!t.ok) return { kind: 'invalid' }
  if (t.expiresAt <= deps.clock.now()) return { kind: 'expired' }
  const submission = deps.db.select().from(webFormSubmissions).where(eq(webFormSubmissions.id, t.submissionId)).get()
  if (!submission || submission.expires_at !== t.expiresAt) return { kind: 'invalid' }
  const form = deps.db.select().from(webForms).where(eq(webForms.id, submission.form_id)).get()
  if (!form) return { kind: 'invalid' }
  return submission.confirmed_at === null ? { kind: 'pending', form, submission } : { kind: 'confirmed', form, submission }
}

/**
 * Confirms a pending submission (the button's POST): the contact is created or updated on
 * each list, the consent recorded with the confirming request's IP and browser, and
 * `contact.subscribed` (on a change) and `contact.confirmed` emitted, in one transaction.
 * A second press finds it confirmed and changes nothing.
 */
export function confirmSubmission(deps: Deps, token: string, client: ClientInfo): ConfirmState {
  const state = confirmState(deps, token)
  if (state.kind !== 'pending') return state
  const { form, submission } = state
  const now = deps.clock.now()
  const data = submission.data as { first_name?: unknown; last_name?: unknown; fields?: Record<string, unknown> }
  const input = { email: submission.email, first_name: data.first_name, last_name: data.last_name, fields: data.fields ?? {} }
  const done = deps.db.transaction(() => {
    // Claims the row first: of two presses at once, only one subscribes.
    const claimed = deps.db
      .update(webFormSubmissions)
      .set({ confirmed_at: now })
      .where(and(eq(webFormSubmissions.id, submission.id), isNull(webFormSubmissions.confirmed_at)))
      .returning({ id: webFormSubmissions.id })
      .all()
    if (claimed.length === 0) return false
    subscribe(
      deps,
      form,
      input,
      { text: submission.consent_text, version: submission.consent_version, ...client, created_at: submission.created_at, confirmed_at: now },
      fieldDefinitions(deps),
    )
    return true
  })
  if (!done) return confirmState(deps, token)
  return { kind: 'confirmed', form, submission: { ...submission, confirmed_at: now } }
}

/** The consents recorded for a contact, newest first. */
export function consentsOf(deps: Deps, contactId: number) {
  return deps.db.select().from(consents).where(eq(consents.contact_id, contactId)).all().reverse()
}

/** The hosted page of a form being edited, without a challenge (the preview runs no script). */
export function previewPage(deps: Deps, draft: { name: string; fields?: WebFormInput['fields']; consent_text: string }): string {
  const form = { public_id: 'preview', name: draft.name.trim() || 'Untitled form', fields: fieldsOf(draft.fields), consent_text: draft.consent_text }
  return hostedPage(deps.config.public_url, form, fieldDefinitions(deps), '{}')
}
