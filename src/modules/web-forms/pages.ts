import type { webForms } from '../../db/schema'
import type { FieldDefinition } from '../custom-fields/values'
import { CHALLENGE_FIELD } from './challenge'

/**
 * The public HTML of web forms, pure (no database): the form markup shared by the hosted
 * page and the embed snippet, the result and confirmation pages, the confirmation mail.
 */

type Form = Pick<typeof webForms.$inferSelect, 'public_id' | 'name' | 'fields' | 'consent_text'>

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The honeypot's input name: a field bots fill and people never see. */
export const HONEYPOT_FIELD = 'website_url'

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1f2328;background:#fff}' +
  '.mr-form label{display:block;font-weight:600;margin:.75rem 0 .25rem}.mr-form input[type=text],.mr-form input[type=email],.mr-form input[type=number],.mr-form input[type=date],.mr-form select{width:100%;box-sizing:border-box;font:inherit;padding:.5rem;border:1px solid #8c959f;border-radius:6px}' +
  '.mr-form .mr-consent{display:flex;gap:.5rem;align-items:flex-start;font-weight:400;margin:1rem 0}.mr-form .mr-consent input{margin-top:.3rem}' +
  '.mr-form button{font:inherit;padding:.5rem 1.25rem;border:0;border-radius:6px;background:#0b5cad;color:#fff;cursor:pointer}.mr-form button[disabled]{background:#6e7781;cursor:wait}' +
  '.mr-hp{position:absolute;left:-10000px;top:auto;width:1px;height:1px;overflow:hidden}.mr-status{font-size:.875rem;color:#57606a}'

function input(key: string, label: string, required: boolean, def: FieldDefinition | undefined, id: string): string {
  const req = required ? ' required' : ''
  const lab = `<label for="${id}">${esc(label)}${required ? '' : ' <span class="mr-optional">(optional)</span>'}</label>`
  if (key === 'first_name' || key === 'last_name')
    return `${lab}<input type="text" id="${id}" name="${key}" autocomplete="${key === 'first_name' ? 'given-name' : 'family-name'}" maxlength="200"${req}>`
  switch (def?.type) {
    case 'number':
      return `${lab}<input type="number" id="${id}" name="${esc(key)}" step="any"${req}>`
    case 'date':
      return `${lab}<input type="date" id="${id}" name="${esc(key)}"${req}>`
    case 'boolean':
      return `<label class="mr-consent" for="${id}"><input type="checkbox" id="${id}" name="${esc(key)}" value="true"${req}> ${esc(label)}</label>`
    case 'one_of':
      return `${lab}<select id="${id}" name="${esc(key)}"${req}><option value="">Choose…</option>${def.options.map((o) => `<option>${esc(o)}</option>`).join('')}</select>`
    default:
      return `${lab}<input type="text" id="${id}" name="${esc(key)}" maxlength="2000"${req}>`
  }
}

/**
 * The form itself: labelled inputs, the consent checkbox (unchecked: consent must be an act,
 * GDPR recital 32), the honeypot (off-screen, out of the tab order and hidden from screen
 * readers, so only bots fill it), the challenge's hidden input and a live status line. The
 * challenge comes inline (`data-challenge`, the hosted page) or from a URL (the snippet).
 */
export function formMarkup(base: string, form: Form, defs: ReadonlyMap<string, FieldDefinition>, challenge: { inline: string } | { url: string }): string {
  const id = (k: string) => `mr-${form.public_id}-${k.replace(/[^a-z0-9_]/gi, '')}`
  const source = 'inline' in challenge ? `data-challenge="${esc(challenge.inline)}"` : `data-challenge-url="${esc(challenge.url)}"`
  return (
    `<form class="mr-form" method="post" action="${esc(`${base}/f/${form.public_id}`)}" data-mailroom-form ${source}>` +
    `<label for="${id('email')}">Email address</label><input type="email" id="${id('email')}" name="email" autocomplete="email" required maxlength="254">` +
    form.fields.map((f) => input(f.key, f.label, f.required, defs.get(f.key), id(f.key))).join('') +
    `<div class="mr-hp" aria-hidden="true"><label for="${id(HONEYPOT_FIELD)}">Website</label><input type="text" id="${id(HONEYPOT_FIELD)}" name="${HONEYPOT_FIELD}" tabindex="-1" autocomplete="off"></div>` +
    `<label class="mr-consent" for="${id('consent')}"><input type="checkbox" id="${id('consent')}" name="consent" value="yes" required> ${esc(form.consent_text)}</label>` +
    `<input type="hidden" name="${CHALLENGE_FIELD}" value="">` +
    `<p class="mr-status" role="status" aria-live="polite" data-mailroom-status></p>` +
    `<button type="submit">Subscribe</button>` +
    `</form>`
  )
}

/** The hosted page at /f/{public_id}. */
export function hostedPage(base: string, form: Form, defs: ReadonlyMap<string, FieldDefinition>, challenge: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">` +
    `<title>${esc(form.name)}</title><style>${STYLE}</style><script src="${esc(`${base}/f/pow.js`)}" defer></script></head>` +
    `<body><main><h1>${esc(form.name)}</h1>${formMarkup(base, form, defs, { inline: challenge })}</main></body></html>`
  )
}

/** What the API shows to paste into another site: the form, its script, and the hosted styles for the honeypot. */
export function embedSnippet(base: string, form: Form, defs: ReadonlyMap<string, FieldDefinition>): string {
  return (
    `<style>.mr-hp{position:absolute;left:-10000px;width:1px;height:1px;overflow:hidden}</style>\n` +
    `${formMarkup(base, form, defs, { url: `${base}/f/${form.public_id}/challenge` })}\n` +
    `<script src="${esc(`${base}/f/pow.js`)}" defer></script>`
  )
}

/** A small page of its own: results, confirmation, refusals. */
export function page(status: number, title: string, body: string): Response {
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">` +
    `<title>${esc(title)}</title><style>${STYLE}</style></head><body><main><h1>${esc(title)}</h1>${body}</main></body></html>`
  return new Response(html, { status, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store, private' } })
}

/** A paragraph of text. */
export const para = (text: string) => `<p>${esc(text)}</p>`

/** The list of what was wrong with a submission. */
export const problemList = (details: Record<string, string[]>) =>
  `<ul>${Object.entries(details)
    .map(([k, v]) => `<li><strong>${esc(k === CHALLENGE_FIELD ? 'Check' : k)}</strong> ${esc(v.join('; '))}</li>`)
    .join('')}</ul><p>Go back to the form, correct it and send it again.</p>`

/** The confirm page: a GET shows a button, only its POST confirms (link scanners fetch links, they do not press buttons). */
export function confirmButton(formName: string, email: string): string {
  return `<p>Confirm that <strong>${esc(email)}</strong> wants to receive mail from ${esc(formName)}.</p><form method="post"><button type="submit">Confirm subscription</button></form>`
}

/** The confirmation mail's text and HTML. */
export function confirmationMail(m: { formName: string; link: string; expiresAt: number }): { text: string; html: string } {
  const until = new Date(m.expiresAt).toUTCString()
  return {
    text: `Please confirm your subscription to ${m.formName}:\n\n${m.link}\n\nThe link works until ${until}. If you did not ask for this, ignore this message: nothing happens without a confirmation.\n`,
    html: `<p>Please confirm your subscription to ${esc(m.formName)}.</p><p><a href="${esc(m.link)}">Confirm my subscription</a></p><p>The link works until ${esc(until)}. If you did not ask for this, ignore this message: nothing happens without a confirmation.</p>`,
  }
}
