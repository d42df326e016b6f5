import { t } from 'elysia'

/** The path parameter of every tracking link: a signed token (payload.mac, base64url). */
export const TokenParams = t.Object({
  token: t.String({ minLength: 24, maxLength: 8192, pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$', description: 'A signed token from a tracked message.' }),
})

/** The one-click unsubscribe POST (RFC 8058 section 3.1: List-Unsubscribe=One-Click, form-encoded). */
export const UnsubscribeBody = t.Optional(
  t.Record(t.String(), t.Unknown(), { description: 'RFC 8058: List-Unsubscribe=One-Click (form-encoded); the page posts source=page.' }),
)
