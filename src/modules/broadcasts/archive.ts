import { and, desc, eq } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { broadcasts } from '../../db/schema'
import { renderArchiveCopy } from './render'
import type { BroadcastRow } from './service'

/** How many archived broadcasts the RSS feed lists, newest first. */
export const FEED_ITEMS = 50

const escapeXml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The sent, archived broadcast with this public id, or null (a draft, an opt-out and a typo all answer 404 alike). */
export function findArchived(deps: Deps, archiveId: string): BroadcastRow | null {
  return (
    deps.db
      .select()
      .from(broadcasts)
      .where(and(eq(broadcasts.archive_id, archiveId), eq(broadcasts.status, 'sent'), eq(broadcasts.archive, true)))
      .get() ?? null
  )
}

/** The archive copy (render.ts: the winning or first version, personalization blank) as one HTML document. */
function archiveCopy(deps: Deps, b: BroadcastRow): { subject: string; html: string } {
  const copy = renderArchiveCopy(deps, b)
  return { subject: copy.subject, html: copy.html ?? `<pre style="white-space:pre-wrap">${escapeXml(copy.text ?? '')}</pre>` }
}

/** The public archive page: the copy in a sandboxed frame, so its styles and scripts cannot reach the page. */
export function archivePage(deps: Deps, b: BroadcastRow): string {
  const copy = archiveCopy(deps, b)
  const sent = new Date(b.finished_at ?? b.started_at ?? b.updated_at).toUTCString()
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeXml(copy.subject)}</title><link rel="alternate" type="application/rss+xml" href="/archive/feed.xml"><style>body{font:16px/1.5 system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem;color:#222}iframe{width:100%;min-height:80vh;border:1px solid #ddd}</style></head><body><h1>${escapeXml(copy.subject)}</h1><p><time>${escapeXml(sent)}</time></p><iframe sandbox title="${escapeXml(copy.subject)}" srcdoc="${escapeXml(copy.html)}"></iframe></body></html>`
}

/** RSS 2.0 (https://www.rssboard.org/rss-specification) of the newest archived sent broadcasts. */
export function archiveFeed(deps: Deps): string {
  const base = deps.config.public_url
  const rows = deps.db
    .select()
    .from(broadcasts)
    .where(and(eq(broadcasts.status, 'sent'), eq(broadcasts.archive, true)))
    .orderBy(desc(broadcasts.finished_at), desc(broadcasts.id))
    .limit(FEED_ITEMS)
    .all()
  const items = rows.map((b) => {
    const link = `${base}/archive/${b.archive_id}`
    const { subject } = archiveCopy(deps, b)
    const date = new Date(b.finished_at ?? b.updated_at).toUTCString()
    return `<item><title>${escapeXml(subject)}</title><link>${escapeXml(link)}</link><guid isPermaLink="true">${escapeXml(link)}</guid><pubDate>${date}</pubDate></item>`
  })
  return `<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>${escapeXml(deps.config.hostname)} archive</title><link>${escapeXml(`${base}/archive/feed.xml`)}</link><description>Archived broadcasts</description>${items.join('')}</channel></rss>\n`
}
