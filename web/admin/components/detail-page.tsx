import type { UseQueryResult } from '@tanstack/react-query'
import { ArrowLeftIcon, type LucideIcon } from 'lucide-react'
import type { ReactElement, ReactNode } from 'react'
import { Link } from 'wouter'
import { ApiError } from '../lib/api'
import { EmptyState, ErrorState, LoadingState } from './states'
import { Button } from './ui/button'

/** The "← All …" link above a record's page, back to the section's list. */
export function BackLink({ children }: { children: ReactNode }) {
  return (
    <Button asChild variant="ghost" size="sm" className="-ml-3 w-fit">
      <Link href="/">
        <ArrowLeftIcon /> {children}
      </Link>
    </Button>
  )
}

/**
 * What a record's page shows until the record is there, each under `back`: "no such …" (an
 * id that cannot be one, or a 404; without `notFound` a 404 is shown as an error), the
 * loading skeleton, or the error with a retry. Null once the record has loaded.
 */
export function detailStates(
  q: UseQueryResult<unknown>,
  {
    back,
    invalid = false,
    notFound,
    loadingLabel,
    rows = 8,
    errorTitle,
  }: {
    back: ReactNode
    invalid?: boolean
    notFound?: { title: string; description: string; icon?: LucideIcon }
    loadingLabel: string
    rows?: number
    errorTitle?: string
  },
): ReactElement | null {
  const missing = invalid || (q.isError && q.error instanceof ApiError && q.error.status === 404)
  let state: ReactNode
  if (notFound && missing) state = <EmptyState icon={notFound.icon} title={notFound.title} description={notFound.description} />
  else if (q.isPending) state = <LoadingState rows={rows} label={loadingLabel} />
  else if (q.isError) state = <ErrorState title={errorTitle} error={q.error} onRetry={() => q.refetch()} />
  else return null
  return (
    <div className="grid gap-6">
      {back}
      {state}
    </div>
  )
}
