/**
 * What the list pages share above their table: a search box, filter selects, "Clear filters"
 * and "Delete N selected" with its confirmation, plus the row selection behind it (a checkbox
 * column whose heading selects every row on the page). The filters live in the URL query, as
 * DataTable reads them.
 */
import { SearchIcon, Trash2Icon, XIcon } from 'lucide-react'
import { useEffect, useState, type ReactNode } from 'react'
import { api } from '../lib/api'
import { useUrlQuery } from '../lib/url-query'
import { useDebounced } from '../lib/use-debounced'
import { formatNumber } from '../lib/utils'
import { ConfirmDelete } from './confirm-dialog'
import type { Column } from './data-table'
import { SelectField } from './select-field'
import { Button } from './ui/button'
import { Checkbox } from './ui/checkbox'
import { Input } from './ui/input'
import { Label } from './ui/label'

/** The search box: typed text goes to the URL's `search` (and so to the API) once typing pauses. */
export function SearchBox({ id, label, placeholder }: { id: string; label: string; placeholder: string }) {
  const [params, setParams] = useUrlQuery()
  const [text, setText] = useState(params.get('search') ?? '')
  const settled = useDebounced(text.trim(), 300)
  useEffect(() => {
    if (settled !== (params.get('search') ?? '')) setParams({ search: settled || null, page: null }, { replace: true })
    // Only a new settled text moves the URL; a URL change from elsewhere is read below.
  }, [settled]) // eslint-disable-line react-hooks/exhaustive-deps
  const inUrl = params.get('search') ?? ''
  useEffect(() => {
    // "Clear filters" (or the back button) changed the URL: show what it says.
    if (inUrl !== settled) setText(inUrl)
  }, [inUrl]) // eslint-disable-line react-hooks/exhaustive-deps
  return (
    <div className="relative w-full sm:w-72">
      <Label htmlFor={id} className="sr-only">
        {label}
      </Label>
      <SearchIcon className="pointer-events-none absolute top-1/2 left-2.5 size-4 -translate-y-1/2 text-muted-foreground" aria-hidden="true" />
      <Input id={id} type="search" placeholder={placeholder} className="pl-8" value={text} onChange={(e) => setText(e.target.value)} autoComplete="off" />
    </div>
  )
}

/** A select whose first entry means "no filter" (Radix selects cannot hold an empty value). */
export function FilterSelect({
  id,
  value,
  onChange,
  allLabel,
  options,
  className,
  label,
}: {
  id?: string
  value: string | null
  onChange: (v: string | null) => void
  allLabel: string
  options: Array<{ value: string; label: string }>
  className?: string
  label?: string
}) {
  return (
    <SelectField
      id={id}
      className={className}
      aria-label={label}
      value={value ?? '__all'}
      onValueChange={(v) => onChange(v === '__all' ? null : v)}
      options={[{ value: '__all', label: allLabel }, ...options]}
    />
  )
}

type FilterSelectProps = Parameters<typeof FilterSelect>[0]

/**
 * A URL-query filter select: `name` is the query parameter it sets (and clears the page
 * number). `values` stands for options labelled as the value with a capital ("sending" -> "Sending").
 */
export function QueryFilter({
  name,
  values,
  options,
  ...props
}: { name: string; values?: readonly string[]; options?: FilterSelectProps['options'] } & Omit<FilterSelectProps, 'value' | 'onChange' | 'options'>) {
  const [params, setParams] = useUrlQuery()
  const shown = options ?? (values ?? []).map((v) => ({ value: v, label: v[0]!.toUpperCase() + v.slice(1) }))
  return <FilterSelect {...props} options={shown} value={params.get(name)} onChange={(v) => setParams({ [name]: v, page: null })} />
}

/** The "Status" filter of a list of things with a lifecycle (broadcasts, drips, triggers). */
export function StatusFilter({ id, statuses }: { id: string; statuses: readonly string[] }) {
  return <QueryFilter id={id} name="status" label="Status" allLabel="Any status" values={statuses} className="w-full sm:w-44" />
}

/** Whether any of the URL-query filters named is set (the empty state says "nothing matches" then). */
export function useFiltered(filters: string[]): boolean {
  const [params] = useUrlQuery()
  return filters.some((f) => params.get(f))
}

/** The rows chosen on a list page, by id, and the rows a delete is being confirmed for. */
export interface RowSelection<T extends { id: number }> {
  selected: ReadonlySet<number>
  /** The checkbox column to put first (none when the reader may not delete). */
  columns: Column<T>[]
  /** The rows whose deletion is being asked (one from its row menu, or the selection as ids); null when none. */
  deleting: T[] | null
  /** Asks to delete these rows (opens the toolbar's confirmation). */
  confirmDelete: (rows: T[] | null) => void
  /** Forgets these ids (once they are deleted). */
  drop: (ids: number[]) => void
}

/**
 * Row selection for a list page: a "Select every <noun> on this page" box in the heading, a
 * "Select <name>" box per row (its click does not open the row). Selections survive paging;
 * unticking the heading clears them all.
 */
export function useRowSelection<T extends { id: number }>({
  enabled,
  noun,
  name,
}: {
  enabled: boolean
  noun: string
  name: (row: T) => string
}): RowSelection<T> {
  const [selected, setSelected] = useState<Set<number>>(new Set())
  const [deleting, setDeleting] = useState<T[] | null>(null)
  const toggle = (id: number, on: boolean) =>
    setSelected((s) => {
      const next = new Set(s)
      if (on) next.add(id)
      else next.delete(id)
      return next
    })
  const column: Column<T> = {
    id: 'select',
    className: 'w-10',
    header: (rows: T[]) => {
      const on = rows.filter((r) => selected.has(r.id)).length
      return (
        <Checkbox
          aria-label={`Select every ${noun} on this page`}
          checked={on === 0 ? false : on === rows.length ? true : 'indeterminate'}
          onCheckedChange={(c) => setSelected(c === true ? new Set([...selected, ...rows.map((r) => r.id)]) : new Set())}
        />
      )
    },
    cell: (row: T) => (
      <Checkbox
        aria-label={`Select ${name(row)}`}
        checked={selected.has(row.id)}
        onClick={(e) => e.stopPropagation()}
        onCheckedChange={(c) => toggle(row.id, c === true)}
      />
    ),
  }
  return {
    selected,
    columns: enabled ? [column] : [],
    deleting,
    confirmDelete: setDeleting,
    drop: (ids) => setSelected((s) => new Set([...s].filter((id) => !ids.includes(id)))),
  }
}

/** How a list page deletes rows: `POST <path>/bulk-delete` with their ids, and the words around it. */
export interface BulkDelete<T> {
  /** The API list route; `/bulk-delete` is appended. */
  path: string
  /** The list's query key, refreshed after the delete. */
  queryKey: string
  /** Singular and plural nouns: "broadcast", "broadcasts". */
  noun: [string, string]
  /**
   * How one row is named in "Delete <it>?"; undefined for a row known only by id (the count is
   * said instead). By default its `name` in quotes.
   */
  title?: (row: T) => string | undefined
  description: ReactNode
  /** "Delete" (default) or "Remove", with its past participle. */
  verb?: [string, string]
}

/**
 * The bar above a list: a search box (`search`), the page's filter selects (children),
 * "Clear filter(s)" while any of `filters` is set in the URL, and, with a selection,
 * "<Delete> N selected" and the confirmation that deletes through the API.
 */
export function ListToolbar<T extends { id: number }>({
  search,
  filters = [],
  children,
  selection,
  bulkDelete,
}: {
  search?: { id: string; label: string; placeholder: string }
  /** The URL-query names the toolbar's controls set: "Clear" empties them. */
  filters?: string[]
  children?: ReactNode
  selection?: RowSelection<T>
  bulkDelete?: BulkDelete<T>
}) {
  const [, setParams] = useUrlQuery()
  const filtered = useFiltered(filters)
  const [verb, done] = bulkDelete?.verb ?? ['Delete', 'deleted']
  const deleting = selection?.deleting ?? null
  const count = deleting?.length ?? 0
  const title = bulkDelete?.title ?? ((row: T) => ((row as { name?: string }).name ? `“${(row as { name?: string }).name}”` : undefined))
  const first = count === 1 ? title(deleting![0]!) : undefined
  const [one, many] = bulkDelete?.noun ?? ['', '']
  return (
    <>
      <div className="flex flex-col flex-wrap gap-2 sm:flex-row sm:items-center">
        {search ? <SearchBox {...search} /> : null}
        {children}
        {filtered ? (
          <Button variant="ghost" size="sm" onClick={() => setParams(Object.fromEntries([...filters, 'page'].map((f) => [f, null])))}>
            <XIcon /> {filters.length === 1 ? 'Clear filter' : 'Clear filters'}
          </Button>
        ) : null}
        {selection?.selected.size && bulkDelete ? (
          <Button
            variant="destructive"
            size="sm"
            className="sm:ml-auto"
            onClick={() => selection.confirmDelete([...selection.selected].map((id) => ({ id }) as T))}
          >
            <Trash2Icon /> {verb} {formatNumber(selection.selected.size)} selected
          </Button>
        ) : null}
      </div>
      {selection && bulkDelete ? (
        <ConfirmDelete
          open={deleting !== null}
          onOpenChange={(o) => !o && selection.confirmDelete(null)}
          title={first ? `${verb} ${first}?` : `${verb} ${formatNumber(count)} ${many}?`}
          description={bulkDelete.description}
          confirmLabel={verb}
          action={async () => {
            const ids = deleting!.map((r) => r.id)
            await api('POST', `${bulkDelete.path}/bulk-delete`, { ids })
            selection.drop(ids)
          }}
          invalidate={[bulkDelete.queryKey]}
          done={count === 1 ? `${one[0]!.toUpperCase()}${one.slice(1)} ${done}` : `${formatNumber(count)} ${many} ${done}`}
        />
      ) : null}
    </>
  )
}
