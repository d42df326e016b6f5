import { t, type Static } from 'elysia'
import { NameString, RecordId, Timestamps } from '../../http/schemas'

/** Each of html and text, in UTF-8 bytes. */
export const MAX_PART_BYTES = 512 * 1024
/** The subject template: one line of at most RFC 5322's 998 characters (section 2.1.1). */
export const MAX_SUBJECT_LENGTH = 998

const summaryFields = {
  id: t.Integer(),
  name: t.String(),
  description: t.String(),
  active_version: t.Integer({ description: 'Number of the version sends use.' }),
  active_version_id: t.Integer({ description: 'Id of that version (messages record it as template_version_id).' }),
  versions_count: t.Integer(),
  subject: t.String({ description: "The active version's subject template." }),
  ...Timestamps,
}

const sender = {
  from: t.Nullable(t.String({ description: 'Sender of the template\'s sends ("Name <address>") when the send names none; null: none.' })),
  reply_to: t.Nullable(t.String({ description: "Reply-To of the template's sends; null: none." })),
}

const SenderSchema = t.Object(sender)
/** Who a template's sends come from and go back to ("Name <address>"); null: not set. */
export type TemplateSender = Static<typeof SenderSchema>

const body = {
  html: t.Nullable(t.String({ description: 'HTML part template; values are HTML-escaped.' })),
  text: t.Nullable(t.String({ description: 'Plain-text part template; values are inserted as they are.' })),
  ...sender,
}

export const TemplateSummarySchema = t.Object(summaryFields)
export const TemplateSchema = t.Object({ ...summaryFields, ...body })
export type TemplateSummary = Static<typeof TemplateSummarySchema>
export type TemplateView = Static<typeof TemplateSchema>

const versionFields = {
  id: t.Integer({ description: 'Version id, unique across templates.' }),
  template_id: t.Integer(),
  version: t.Integer({ description: '1, 2, 3... per template.' }),
  subject: t.String(),
  active: t.Boolean(),
  created_at: t.String({ format: 'date-time' }),
}

export const VersionSummarySchema = t.Object(versionFields)
export const VersionSchema = t.Object({ ...versionFields, ...body })
export type VersionSummary = Static<typeof VersionSummarySchema>
export type VersionView = Static<typeof VersionSchema>

// Sizes are checked in UTF-8 bytes by the service; the character limit here only stops absurd bodies early.
const Subject = t.String({ minLength: 1, maxLength: MAX_SUBJECT_LENGTH, description: `Handlebars, one line, at most ${MAX_SUBJECT_LENGTH} characters.` })
const Part = (what: string) =>
  t.Optional(
    t.Nullable(t.String({ maxLength: MAX_PART_BYTES, description: `${what} template (Handlebars), at most 512 KiB in UTF-8; "" or null means none.` })),
  )

const Mailbox = (what: string) =>
  t.Optional(
    t.Nullable(
      t.String({ maxLength: 1000, description: `${what} of the template's sends, "Name <address>" or "address" (not a template); "" or null means none.` }),
    ),
  )

export const CreateTemplateBody = t.Object({
  name: NameString(),
  description: t.Optional(t.String({ maxLength: 2000 })),
  subject: Subject,
  html: Part('HTML part'),
  text: Part('Plain-text part'),
  from: Mailbox('Sender (used when the send names no from)'),
  reply_to: Mailbox('Reply-To'),
})

export const UpdateTemplateBody = t.Object({
  name: t.Optional(NameString()),
  description: t.Optional(t.String({ maxLength: 2000 })),
  subject: t.Optional(Subject),
  html: Part('HTML part'),
  text: Part('Plain-text part'),
  from: Mailbox('Sender (used when the send names no from)'),
  reply_to: Mailbox('Reply-To'),
})

export const VersionParams = t.Object({ id: RecordId('Template id.'), version: RecordId('Version number.') })

/** A part of unsaved content for a preview: replaces the version's, as PATCH would. */
const Draft = (what: string) =>
  t.Optional(
    t.Nullable(
      t.String({ maxLength: MAX_PART_BYTES, description: `Unsaved ${what} to render instead of the version's ("" or null removes it); nothing is stored.` }),
    ),
  )

export const RenderBody = t.Object({
  variables: t.Optional(
    t.Record(t.String(), t.String(), {
      maxProperties: 1000,
      description: 'Variable name -> string value. A dotted name is a nested path: {"user.name": "Ann"} fills {{user.name}}.',
    }),
  ),
  to: t.Optional(t.String({ maxLength: 320, description: 'Recipient address: spins choose what this recipient would receive.' })),
  version: t.Optional(t.Integer({ minimum: 1, description: 'Version number; the active version when omitted.' })),
  subject: t.Optional(
    t.String({ maxLength: MAX_SUBJECT_LENGTH, description: "Unsaved subject to render instead of the version's (a preview of changes; nothing is stored)." }),
  ),
  html: Draft('HTML part'),
  text: Draft('plain-text part'),
  from: Draft('from'),
  reply_to: Draft('reply_to'),
})

export const RenderedSchema = t.Object({
  subject: t.String({ description: 'On one line: line breaks from variables become spaces.' }),
  html: t.Nullable(t.String()),
  text: t.Nullable(t.String()),
  missing_variables: t.Array(t.String(), { description: 'Variables used but not given (rendered empty), and spin:<name> for deleted spin tags.' }),
  ...sender,
  template_id: t.Integer(),
  template_version_id: t.Integer(),
  version: t.Integer(),
})
export type RenderedTemplate = Static<typeof RenderedSchema>
