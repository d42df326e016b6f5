import { t, type Static } from 'elysia'
import { NameString, Timestamps } from '../../http/schemas'

/** Names a form post uses for its own purposes; no asked field may take them. */
export const RESERVED_INPUTS = ['email', 'consent', 'website_url', 'altcha'] as const

const FieldSchema = t.Object({
  key: t.String({ minLength: 1, maxLength: 100, description: '`first_name`, `last_name` or the key of a custom field (its type decides the input).' }),
  label: t.Optional(t.String({ maxLength: 200, description: 'What the page shows; defaults to a name made from the key.' })),
  required: t.Optional(t.Boolean({ default: false })),
})

const OptionalUrl = (description: string) => t.Optional(t.Union([t.String({ maxLength: 2000, pattern: '^https?://', description }), t.Null()], { description }))

const writable = {
  name: NameString(),
  list_ids: t.Array(t.Integer({ minimum: 1 }), { minItems: 1, maxItems: 50, description: 'Lists a submission subscribes to.' }),
  fields: t.Optional(t.Array(FieldSchema, { maxItems: 50, description: 'Fields asked besides the address, in page order.' })),
  consent_text: t.String({ minLength: 1, maxLength: 2000, description: 'The wording beside the consent checkbox (unchecked by default).' }),
  success_message: t.Optional(t.String({ maxLength: 2000 })),
  success_url: OptionalUrl('Where a browser goes after a successful submission (instead of the success message).'),
  failure_message: t.Optional(t.String({ maxLength: 2000 })),
  failure_url: OptionalUrl('Where a browser goes after a refused submission (instead of the failure message).'),
  double_opt_in: t.Optional(t.Boolean({ default: true, description: 'Store submissions pending until the address confirms by mail.' })),
  allowed_origins: t.Optional(
    t.Array(t.String({ maxLength: 300 }), {
      maxItems: 50,
      description: 'Origins (https://example.com) of pages that embed the form: CORS and the Origin check.',
    }),
  ),
  confirmation_from: t.Optional(
    t.Union([t.String({ maxLength: 300 }), t.Null()], { description: 'Sender of the confirmation mail; null: the default_from setting.' }),
  ),
  confirmation_subject: t.Optional(t.String({ minLength: 1, maxLength: 300 })),
  welcome_drip_id: t.Optional(t.Union([t.Integer({ minimum: 1 }), t.Null()], { description: 'A drip started for new subscribers (automations).' })),
}

export const CreateWebFormBody = t.Object(writable)
export const UpdateWebFormBody = t.Partial(t.Object(writable))
export type WebFormInput = Static<typeof CreateWebFormBody>
export type WebFormPatch = Static<typeof UpdateWebFormBody>

export const WebFormSchema = t.Object({
  id: t.Integer(),
  public_id: t.String({ description: 'The id in public URLs.' }),
  name: t.String(),
  list_ids: t.Array(t.Integer()),
  fields: t.Array(t.Object({ key: t.String(), label: t.String(), required: t.Boolean() })),
  consent_text: t.String(),
  consent_version: t.Integer({ description: 'Goes up by one whenever consent_text changes; each consent records it.' }),
  success_message: t.String(),
  success_url: t.Union([t.String(), t.Null()]),
  failure_message: t.String(),
  failure_url: t.Union([t.String(), t.Null()]),
  double_opt_in: t.Boolean(),
  allowed_origins: t.Array(t.String()),
  confirmation_from: t.Union([t.String(), t.Null()]),
  confirmation_subject: t.String(),
  welcome_drip_id: t.Union([t.Integer(), t.Null()]),
  hosted_url: t.String({ description: 'The hosted page.' }),
  embed_html: t.String({ description: 'HTML to paste into another site: a plain form that posts here.' }),
  ...Timestamps,
})
export type WebFormView = Static<typeof WebFormSchema>

/** The path parameter of the public form routes. */
export const PublicIdParams = t.Object({ public_id: t.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }) })

/** The path parameter of a confirmation link. */
export const ConfirmParams = t.Object({ token: t.String({ minLength: 1, maxLength: 200, description: 'The signed token of a confirmation link.' }) })

/** A form post: email, the asked fields by key, consent, the solved challenge (altcha); form-encoded or JSON. */
export const SubmissionBody = t.Optional(t.Record(t.String(), t.Unknown(), { description: 'email, the asked fields by key, consent, altcha.' }))

/** The builder's live preview: the fields of a form as being edited. */
export const PreviewBody = t.Object({
  name: t.String({ maxLength: 200 }),
  fields: t.Optional(t.Array(FieldSchema, { maxItems: 50 })),
  consent_text: t.String({ maxLength: 2000 }),
})
export const PreviewSchema = t.Object({ html: t.String({ description: 'The hosted page as it would look (scripts off).' }) })
