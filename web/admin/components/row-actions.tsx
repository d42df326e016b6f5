import { MoreHorizontalIcon, type LucideIcon } from 'lucide-react'
import type { ReactNode } from 'react'
import type { Column } from './data-table'
import { Button } from './ui/button'
import { DropdownMenu, DropdownMenuContent, DropdownMenuItem, DropdownMenuSeparator, DropdownMenuTrigger } from './ui/dropdown-menu'

/** One entry of a row's menu; `hidden` where the administrator may not do it. */
export interface RowAction {
  label: ReactNode
  icon: LucideIcon
  onSelect: () => void
  hidden?: boolean
  destructive?: boolean
}

/**
 * A row's "…" menu ("Actions for `name`"): the entries allowed, the destructive ones last
 * behind a separator. Nothing at all when none is allowed.
 */
export function RowActions({ name, actions, className }: { name: string; actions: RowAction[]; className?: string }) {
  const shown = actions.filter((a) => !a.hidden)
  if (!shown.length) return null
  const safe = shown.filter((a) => !a.destructive)
  const destructive = shown.filter((a) => a.destructive)
  const item = (a: RowAction, i: number) => (
    <DropdownMenuItem key={i} destructive={a.destructive} onSelect={a.onSelect}>
      <a.icon /> {a.label}
    </DropdownMenuItem>
  )
  return (
    <DropdownMenu>
      <DropdownMenuTrigger asChild>
        <Button variant="ghost" size="icon" className={className} aria-label={`Actions for ${name}`}>
          <MoreHorizontalIcon />
        </Button>
      </DropdownMenuTrigger>
      <DropdownMenuContent align="end">
        {safe.map(item)}
        {safe.length && destructive.length ? <DropdownMenuSeparator /> : null}
        {destructive.map(item)}
      </DropdownMenuContent>
    </DropdownMenu>
  )
}

/** The last column of a list: each row's actions, under a heading only screen readers read. */
export function actionsColumn<T>(cell: (row: T) => ReactNode): Column<T> {
  return { id: 'actions', header: <span className="sr-only">Actions</span>, className: 'w-12 text-right', cell }
}
