/**
 * Resend's content variables (https://resend.com/docs/dashboard/broadcasts/introduction):
 * `{{{FIRST_NAME|there}}}`, `{{{LAST_NAME}}}`, `{{{EMAIL}}}`, `{{{RESEND_UNSUBSCRIBE_URL}}}`
 * and contact properties by key, each with an optional fallback after `|`. Broadcasts made
 * through the compat surface are stored with Mailroom's template variables instead, so the
 * one native renderer (broadcasts/render.ts) personalises them: the contact's names and
 * address, its custom fields by key and the signed unsubscribe link of each message.
 * Pure: no database.
 */

/** Resend's built-in names -> the native variables (render.ts `variablesOf`). */
const BUILT_IN: Record<string, string> = {
  FIRST_NAME: 'first_name',
  LAST_NAME: 'last_name',
  EMAIL: 'email',
  RESEND_UNSUBSCRIBE_URL: 'unsubscribe_url',
}

/** `{{{NAME}}}` or `{{{NAME|fallback}}}`; a fallback holds no braces (it is plain text). */
const RESEND_VARIABLE = /\{\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*(?:\|([^{}]*))?\}\}\}/g

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/**
 * Rewrites Resend's variables in one part to Handlebars: the native engine has no default
 * helper, so a fallback becomes `{{#if name}}{{name}}{{else}}fallback{{/if}}` (the engine
 * treats an #if-tested variable as optional). The value is written with double braces, so
 * it is HTML-escaped in the html part (Resend's triple braces are its syntax, not a request
 * for raw HTML); the fallback is escaped there too. A property key is Mailroom's custom
 * field key, which is lower snake case, so the name is lower-cased.
 */
export function translateResendVariables(source: string, part: 'subject' | 'html' | 'text'): string {
  return source.replace(RESEND_VARIABLE, (_all, name: string, fallback: string | undefined) => {
    const v = BUILT_IN[name] ?? name.toLowerCase()
    if (fallback === undefined) return `{{${v}}}`
    // Spaces just inside the braces are layout (`{{{ FIRST_NAME | there }}}`), not part of the text.
    const text = fallback.trim()
    return `{{#if ${v}}}{{${v}}}{{else}}${part === 'html' ? escapeHtml(text) : text}{{/if}}`
  })
}
