import { preparedFor } from '../../db/prepared'
import type { Db } from '../../db/client'
import type { broadcasts, broadcastVersions } from '../../db/schema/broadcasts'
import type { Deps } from '../../deps'
import { AppError, notFound } from '../../lib/errors'
import { checkMessage, senderDomain, type SendInput } from '../messages/compose'
import { acceptMessages, builtMessage, newMessageId, signingDomain, type PreparedMessage } from '../messages/service'
import { spinTagAlternatives } from '../spin-tags/service'
import { buildVariables, compileVersion, renderVersion, type CompiledVersion, type TemplateSource } from '../templates/engine'
import { applyTracking, trackingUrl } from '../tracking/service'

/**
 * Rendering of broadcasts (issue 15): each version's content is compiled once per run of the
 * sender, and every recipient's copy is personalised and built as it is sent (never up
 * front), so a restart renders again from the committed recipient rows and the pinned
 * template versions.
 */

export type BroadcastRow = typeof broadcasts.$inferSelect
export type VersionRow = typeof broadcastVersions.$inferSelect

/** One version's content, compiled, with its sender; `versionId` null is the broadcast's own content. */
export interface CompiledContent {
  versionId: number | null
  compiled: CompiledVersion
  from: string
  replyTo: string | null
  template: { id: number; version_id: number } | null
}

/** The contact fields a recipient's copy is personalised with. */
export interface ContactValues {
  id: number | null
  email: string
  first_name: string | null
  last_name: string | null
  fields: Record<string, unknown>
}

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    templateVersion: c.prepare<{ id: number; template_id: number; subject: string; html: string | null; text: string | null }, [number]>(
      'SELECT id, template_id, subject, html, text FROM template_versions WHERE id = ?',
    ),
    activeTemplateVersion: c.prepare<{ id: number; template_id: number; subject: string; html: string | null; text: string | null }, [number]>(
      'SELECT v.id, v.template_id, v.subject, v.html, v.text FROM templates t JOIN template_versions v ON v.id = t.active_version_id WHERE t.id = ?',
    ),
    versions: c.prepare<VersionRow, [number]>('SELECT * FROM broadcast_versions WHERE broadcast_id = ? ORDER BY id'),
    broadcast: c.prepare<BroadcastRow, [number]>('SELECT * FROM broadcasts WHERE id = ?'),
    sampleContact: c.prepare<{ id: number; email: string; first_name: string | null; last_name: string | null; fields: string }, [number]>(
      'SELECT c.id, c.email, c.first_name, c.last_name, c.fields FROM broadcast_recipients r JOIN contacts c ON c.id = r.contact_id WHERE r.broadcast_id = ? ORDER BY r.id LIMIT 1',
    ),
  }
})

/** The raw broadcast row (JSON columns parsed). */
export function broadcastRow(deps: Pick<Deps, 'db'>, id: number): BroadcastRow {
  const raw = statements(deps.db).broadcast.get(id) as Record<string, unknown> | null
  if (!raw) throw notFound('broadcast', id)
  return parseJsonColumns(raw)
}

const JSON_COLUMNS = ['list_ids', 'exclude_list_ids', 'exclude_segment_ids', 'tags', 'send_window', 'split_test'] as const

/** A row read with a prepared statement has its JSON columns as text; drizzle's type has them parsed. */
export function parseJsonColumns(raw: Record<string, unknown>): BroadcastRow {
  for (const k of JSON_COLUMNS) if (typeof raw[k] === 'string') raw[k] = JSON.parse(raw[k] as string)
  return raw as unknown as BroadcastRow
}

/** The broadcast's versions in id order. */
export function versionsOf(deps: Pick<Deps, 'db'>, broadcastId: number): VersionRow[] {
  return statements(deps.db).versions.all(broadcastId)
}

/** "Name <address>" with the display name replaced (RFC 5322 section 3.4: a quoted display name). */
function withName(from: string, name: string | null): string {
  if (!name) return from
  const m = /<([^>]+)>\s*$/.exec(from)
  const address = m ? m[1]! : from.trim()
  return `"${name.replace(/["\\]/g, '')}" <${address}>`
}

/**
 * The content of one version (or of the broadcast when `v` is null), compiled: the version's
 * own subject/html/text, else its pinned template version's, else the broadcast's, else the
 * broadcast's pinned template version's. Throws conflict when it does not compile.
 */
export function compileContent(deps: Pick<Deps, 'db'>, b: BroadcastRow, v: VersionRow | null): CompiledContent {
  const st = statements(deps.db)
  // The version pinned at the start; before the start (test sends of a draft, the archive of
  // a broadcast that never pinned) the template's active version.
  const templateOf = (pinned: number | null, templateId: number | null) =>
    pinned ? st.templateVersion.get(pinned) : templateId ? st.activeTemplateVersion.get(templateId) : null
  const vt = v ? templateOf(v.template_version_id, v.template_id) : null
  const bt = templateOf(b.template_version_id, b.template_id)
  const source: TemplateSource = {
    subject: v?.subject ?? vt?.subject ?? (b.subject || bt?.subject || ''),
    html: v?.html ?? vt?.html ?? b.html ?? bt?.html ?? null,
    text: v?.text ?? vt?.text ?? b.text ?? bt?.text ?? null,
  }
  const result = compileVersion(source)
  if (!result.ok) {
    const problems = Object.entries(result.errors).map(([part, messages]) => `${part}: ${messages.join('; ')}`)
    throw new AppError('conflict', `The content of ${v ? `version ${v.id}` : 'the broadcast'} does not compile (${problems.join(', ')}).`)
  }
  const t = vt ?? bt
  return {
    versionId: v?.id ?? null,
    compiled: result.compiled,
    from: withName(b.from_address, v?.from_name ?? null),
    replyTo: b.reply_to,
    template: t ? { id: t.template_id, version_id: t.id } : null,
  }
}

/** The public web view of a broadcast (the archive route of bc-api serves it). */
export function archiveUrl(deps: Pick<Deps, 'config'>, b: Pick<BroadcastRow, 'archive_id'>): string {
  return `${deps.config.public_url}/archive/${b.archive_id}`
}

/** The template variables of one recipient: contact fields, custom fields (by key) and the links. */
function variablesOf(contact: ContactValues, links: { unsubscribe_url: string; web_view_url: string }): Record<string, string> {
  const vars: Record<string, string> = {}
  for (const [k, v] of Object.entries(contact.fields)) if (v !== null && v !== undefined && !k.includes('.')) vars[k] = String(v)
  Object.assign(vars, {
    email: contact.email,
    first_name: contact.first_name ?? '',
    last_name: contact.last_name ?? '',
    contact_id: contact.id === null ? '' : String(contact.id),
    ...links,
  })
  return vars
}

/** Personalises one version for one contact: subject, html and text. */
function renderFor(deps: Deps, content: CompiledContent, contact: ContactValues, links: { unsubscribe_url: string; web_view_url: string }) {
  const variables = buildVariables(variablesOf(contact, links))
  if (!variables.ok) throw new AppError('validation_failed', 'The contact fields cannot be used as template variables.', variables.errors)
  return renderVersion(content.compiled, {
    to: contact.email,
    // Spin choices are stable per recipient and version.
    versionId: content.versionId ?? content.template?.version_id ?? 0,
    variables: variables.variables,
    spinTags: spinTagAlternatives(deps, content.compiled.spinNames),
  })
}

/**
 * One recipient's copy, built as an API send is (the compose checks, tracking with signed
 * tokens, RFC 8058 one-click List-Unsubscribe, MIME), under a message id chosen first so the
 * unsubscribe link in the body names this message.
 */
export function prepareRecipientMessage(
  deps: Deps,
  b: BroadcastRow,
  content: CompiledContent,
  contact: ContactValues,
  opts: { test?: boolean } = {},
): PreparedMessage {
  const id = newMessageId()
  const unsubscribe = !opts.test
  const links = {
    unsubscribe_url: unsubscribe ? trackingUrl(deps, { kind: 'unsubscribe', messageId: id, value: contact.email }) : '#',
    web_view_url: archiveUrl(deps, b),
  }
  const rendered = renderFor(deps, content, contact, links)
  const input: SendInput = {
    from: content.from,
    to: [contact.email],
    reply_to: content.replyTo ? [content.replyTo] : undefined,
    subject: opts.test ? `[Test] ${rendered.subject}` : rendered.subject,
    html: rendered.html,
    text: rendered.text,
    tags: opts.test ? [...b.tags.filter((t) => t !== 'test'), 'test'] : b.tags,
  }
  const checked = checkMessage(input)
  const fromDomain = senderDomain(checked)
  const domain = signingDomain(deps, fromDomain)
  applyTracking(deps, checked, id, { opens: !!b.track_opens && !opts.test, clicks: !!b.track_clicks && !opts.test, unsubscribe })
  return { ...builtMessage(deps, checked, id, fromDomain, domain), poolId: b.pool_id ?? domain?.pool_id ?? null, template: content.template }
}

/** A placeholder contact for test sends and the archive copy (no contact of the audience). */
function placeholderContact(email: string): ContactValues {
  return { id: null, email, first_name: 'Subscriber', last_name: '', fields: {} }
}

/**
 * Test sends: every version (or the broadcast's own content) rendered for a sample contact
 * of the audience, else placeholder values, and queued to each address in `to`, marked as a
 * test (subject prefix, tag `test`, no tracking, no unsubscribe header) and counted nowhere:
 * no recipient rows, no messages.broadcast_id. Returns the queued message ids.
 */
export async function sendBroadcastTest(deps: Deps, broadcastId: number, to: string[]): Promise<string[]> {
  const b = broadcastRow(deps, broadcastId)
  const versions = versionsOf(deps, broadcastId)
  const contents = versions.length ? versions.map((v) => compileContent(deps, b, v)) : [compileContent(deps, b, null)]
  const sample = statements(deps.db).sampleContact.get(broadcastId)
  const prepared: PreparedMessage[] = []
  for (const address of to) {
    const contact: ContactValues = sample
      ? {
          id: sample.id,
          email: address,
          first_name: sample.first_name,
          last_name: sample.last_name,
          fields: JSON.parse(sample.fields) as Record<string, unknown>,
        }
      : placeholderContact(address)
    for (const content of contents) prepared.push(prepareRecipientMessage(deps, b, content, contact, { test: true }))
  }
  const result = await acceptMessages(deps, {
    ctx: { source: 'broadcast', apiKeyId: null, poolId: b.pool_id },
    prepare: () => prepared,
    respond: () => ({ status: 202, body: null }),
  })
  return result.replayed ? [] : result.accepted.map((a) => a.id)
}

/**
 * The archive copy (web view) of a broadcast: the winning version (or the first, or the
 * broadcast's own content) rendered with placeholder values and no tracking, for the public
 * archive page and RSS feed (bc-api's routes).
 */
export function renderArchiveCopy(deps: Deps, broadcast: Pick<BroadcastRow, 'id'>): { subject: string; html: string | null; text: string | null } {
  const b = broadcastRow(deps, broadcast.id)
  const versions = versionsOf(deps, b.id)
  const v = versions.find((x) => x.id === b.winner_version_id) ?? versions[0] ?? null
  const rendered = renderFor(deps, compileContent(deps, b, v), placeholderContact(''), { unsubscribe_url: '#', web_view_url: archiveUrl(deps, b) })
  return { subject: rendered.subject, html: rendered.html, text: rendered.text }
}
