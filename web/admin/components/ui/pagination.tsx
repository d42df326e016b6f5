import { ChevronLeftIcon, ChevronRightIcon } from 'lucide-react'
import { cn, formatNumber } from '../../lib/utils'
import { Button } from './button'

/** Previous / next through a server-paginated list, with "21–40 of 1,234". */
export function Pagination({
  page,
  perPage,
  total,
  lastPage,
  onPage,
  className,
}: {
  page: number
  perPage: number
  total: number
  lastPage: number
  onPage: (page: number) => void
  className?: string
}) {
  const first = total === 0 ? 0 : (page - 1) * perPage + 1
  const last = Math.min(page * perPage, total)
  return (
    <nav aria-label="Pagination" className={cn('flex items-center justify-between gap-4 text-sm text-muted-foreground', className)}>
      <p aria-live="polite">{total === 0 ? 'No results' : `${formatNumber(first)}–${formatNumber(last)} of ${formatNumber(total)}`}</p>
      <div className="flex items-center gap-2">
        <span className="hidden sm:inline">
          Page {formatNumber(page)} of {formatNumber(Math.max(lastPage, 1))}
        </span>
        <Button variant="outline" size="sm" onClick={() => onPage(page - 1)} disabled={page <= 1} aria-label="Previous page">
          <ChevronLeftIcon />
          <span className="hidden sm:inline">Previous</span>
        </Button>
        <Button variant="outline" size="sm" onClick={() => onPage(page + 1)} disabled={page >= lastPage} aria-label="Next page">
          <span className="hidden sm:inline">Next</span>
          <ChevronRightIcon />
        </Button>
      </div>
    </nav>
  )
}
