import { keepPreviousData, useQuery } from '@tanstack/react-query'
import type { LucideIcon } from 'lucide-react'
import type { ReactNode } from 'react'
import { apiPage, type Page } from '../lib/api'
import { intParam, useUrlQuery } from '../lib/url-query'
import { cn } from '../lib/utils'
import { EmptyState, ErrorState, LoadingState } from './states'
import { Card } from './ui/card'
import { Pagination } from './ui/pagination'
import { Table, TableBody, TableCell, TableHead, TableHeader, TableRow } from './ui/table'

/** One column: its heading and how a row shows in it. */
export interface Column<T> {
  id: string
  /** The heading; a function gets the rows on screen (a "select all on this page" box). */
  header: ReactNode | ((rows: T[]) => ReactNode)
  cell: (row: T) => ReactNode
  className?: string
}

/**
 * A server-paginated list: reads `page` and `per_page` (and the `filters` named) from the
 * URL query, asks the API for that page only, and keeps the previous rows on screen while
 * the next page loads. Loading, empty and error states are built in.
 */
export function DataTable<T>({
  path,
  queryKey,
  columns,
  rowKey,
  filters = [],
  defaultPerPage = 25,
  empty,
  onRowClick,
  caption,
  refetchInterval,
}: {
  /** The API list route, e.g. /api/v2/api-keys. */
  path: string
  queryKey: string
  columns: Column<T>[]
  rowKey: (row: T) => string | number
  /** URL query names passed on to the API as filters. */
  filters?: string[]
  defaultPerPage?: number
  empty: { title: string; description?: ReactNode; icon?: LucideIcon; action?: ReactNode }
  onRowClick?: (row: T) => void
  caption?: string
  /** Polls the page while this answers a number of milliseconds for the rows on screen (live progress). */
  refetchInterval?: (rows: T[]) => number | false
}) {
  const [params, setParams] = useUrlQuery()
  const page = intParam(params, 'page', 1)
  const perPage = intParam(params, 'per_page', defaultPerPage)
  const filterValues = Object.fromEntries(filters.map((f) => [f, params.get(f) ?? undefined]))
  const q = useQuery<Page<T>>({
    queryKey: [queryKey, page, perPage, filterValues],
    queryFn: () => apiPage<T>(path, { page, per_page: perPage, ...filterValues }),
    placeholderData: keepPreviousData,
    refetchInterval: refetchInterval ? (query) => (query.state.data ? refetchInterval(query.state.data.data) : false) : undefined,
  })

  if (q.isPending) return <LoadingState rows={6} />
  if (q.isError) return <ErrorState error={q.error} onRetry={() => q.refetch()} />
  const { data, meta } = q.data
  if (meta.total === 0 && page === 1) return <EmptyState {...empty} />

  return (
    <div className="grid gap-4">
      <Card className={cn('gap-0 overflow-hidden py-0', q.isPlaceholderData && 'opacity-70')} aria-busy={q.isFetching}>
        <Table>
          {caption ? <caption className="sr-only">{caption}</caption> : null}
          <TableHeader>
            <TableRow className="hover:bg-transparent">
              {columns.map((c) => (
                <TableHead key={c.id} className={c.className}>
                  {typeof c.header === 'function' ? c.header(data) : c.header}
                </TableHead>
              ))}
            </TableRow>
          </TableHeader>
          <TableBody>
            {data.map((row) => (
              <TableRow key={rowKey(row)} className={onRowClick ? 'cursor-pointer' : undefined} onClick={onRowClick ? () => onRowClick(row) : undefined}>
                {columns.map((c) => (
                  <TableCell key={c.id} className={c.className}>
                    {c.cell(row)}
                  </TableCell>
                ))}
              </TableRow>
            ))}
          </TableBody>
        </Table>
      </Card>
      <Pagination
        page={meta.current_page}
        perPage={meta.per_page}
        total={meta.total}
        lastPage={meta.last_page}
        onPage={(p) => setParams({ page: p === 1 ? null : p })}
      />
    </div>
  )
}
