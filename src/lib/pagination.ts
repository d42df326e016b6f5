/** The spec's pagination: page from 1, per_page default 25 and at most 100. */
export const DEFAULT_PER_PAGE = 25
export const MAX_PER_PAGE = 100
/** The highest page asked for: keeps offsets exact integers that SQLite binds as such. */
export const MAX_PAGE = 1_000_000_000

export interface PageRequest {
  page: number
  per_page: number
}

export interface PageMeta {
  current_page: number
  per_page: number
  total: number
  last_page: number
}

/** Normalises query values (already validated as integers in range by the route schema). */
export function pageRequest(query: { page?: number; per_page?: number }): PageRequest & { offset: number } {
  const page = query.page ?? 1
  const per_page = query.per_page ?? DEFAULT_PER_PAGE
  return { page, per_page, offset: (page - 1) * per_page }
}

/** meta for a page; last_page is at least 1 so that walking "until current_page == last_page" ends on an empty list too. */
export function pageMeta(req: PageRequest, total: number): PageMeta {
  return {
    current_page: req.page,
    per_page: req.per_page,
    total,
    last_page: Math.max(1, Math.ceil(total / req.per_page)),
  }
}

/**
 * Where to read a page by id. OFFSET walks every row it skips, so a page past the middle
 * is read from the far end (descending with the mirrored offset) and reversed by the
 * caller: the deepest page costs what the middle one does. Null when the page is past the end.
 */
export function pageWindow(req: PageRequest & { offset: number }, total: number): { limit: number; offset: number; descending: boolean } | null {
  if (req.offset >= total) return null
  const end = Math.min(total, req.offset + req.per_page)
  const descending = req.offset > total - end
  return { limit: end - req.offset, offset: descending ? total - end : req.offset, descending }
}
