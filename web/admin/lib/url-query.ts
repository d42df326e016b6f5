import { useCallback, useMemo } from 'react'
import { useLocation, useSearch } from 'wouter'

/**
 * The page's URL query as state: list pages keep `page`, `per_page` and their filters here,
 * so a reload, the back button and a shared link show the same rows.
 */
export function useUrlQuery(): [URLSearchParams, (changes: Record<string, string | number | null | undefined>, opts?: { replace?: boolean }) => void] {
  const search = useSearch()
  const [location, navigate] = useLocation()
  const params = useMemo(() => new URLSearchParams(search), [search])
  const set = useCallback(
    (changes: Record<string, string | number | null | undefined>, opts: { replace?: boolean } = {}) => {
      const next = new URLSearchParams(search)
      for (const [k, v] of Object.entries(changes)) {
        if (v === null || v === undefined || v === '') next.delete(k)
        else next.set(k, String(v))
      }
      const qs = next.toString()
      navigate(qs ? `${location}?${qs}` : location, { replace: opts.replace })
    },
    [search, location, navigate],
  )
  return [params, set]
}

/** A positive integer from the query, or the default. */
export function intParam(params: URLSearchParams, name: string, fallback: number): number {
  const n = Number(params.get(name))
  return Number.isInteger(n) && n > 0 ? n : fallback
}
