/**
 * What the audience pages share: the API's record shapes, the lists and custom fields as
 * menus, the contact status badge, a confirm-before-delete dialog and a debounce.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { SearchIcon } from 'lucide-react'
import { useEffect, useState, type ReactNode } from 'react'
import { toast } from 'sonner'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { Badge } from '../../components/ui/badge'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { Label } from '../../components/ui/label'
import { SelectField } from '../../components/select-field'
import { apiPage, errorMessage } from '../../lib/api'
import { useUrlQuery } from '../../lib/url-query'

export const CONTACT_STATUSES = ['subscribed', 'unconfirmed', 'unsubscribed', 'bounced', 'complained'] as const
export type ContactStatus = (typeof CONTACT_STATUSES)[number]

export interface MailingList {
  id: number
  name: string
  description: string
  counts: Record<ContactStatus | 'total', number>
  created_at: string
  updated_at: string
}

export type FieldValue = string | number | boolean
export interface Contact {
  id: number
  email: string
  first_name: string | null
  last_name: string | null
  list_id: number
  status: ContactStatus
  fields: Record<string, FieldValue>
  created_at: string
  updated_at: string
}

export type CustomFieldType = 'text' | 'number' | 'date' | 'boolean' | 'one_of'
export interface CustomField {
  id: number
  key: string
  name: string
  type: CustomFieldType
  options: string[]
  required: boolean
  default_value: FieldValue | null
  created_at: string
  updated_at: string
}

/** Most lists and custom fields one menu shows (the API's largest page). */
const MENU_SIZE = 100

/** Every list (up to 100), for menus and names; shares the "lists" key so list changes refresh it. */
export function useListMenu() {
  return useQuery({ queryKey: ['lists', 'menu'], queryFn: () => apiPage<MailingList>('/api/v2/lists', { per_page: MENU_SIZE }), staleTime: 30_000 })
}

/** The labelled "List" picker of a form: the lists of the menu by name, the value is the list's id. */
export function ListField({ value, onValueChange, error }: { value: string | undefined; onValueChange: (v: string) => void; error?: string }) {
  const lists = useListMenu()
  return (
    <FormField label="List" error={error}>
      <SelectField
        value={value}
        onValueChange={onValueChange}
        placeholder="Choose a list"
        options={(lists.data?.data ?? []).map((l) => ({ value: String(l.id), label: l.name }))}
      />
    </FormField>
  )
}

/** Every custom field (up to 100), for typed inputs and filters. */
export function useCustomFieldMenu() {
  return useQuery({
    queryKey: ['custom-fields', 'menu'],
    queryFn: () => apiPage<CustomField>('/api/v2/custom-fields', { per_page: MENU_SIZE }),
    staleTime: 30_000,
  })
}

/** A list's name from the menu, or its id while the menu loads. */
export function useListName(): (id: number | null | undefined) => string {
  const lists = useListMenu()
  return (id) => {
    if (id == null) return '—'
    return lists.data?.data.find((l) => l.id === id)?.name ?? `List ${id}`
  }
}

const STATUS_VARIANT: Record<ContactStatus, 'success' | 'secondary' | 'outline' | 'warning' | 'destructive'> = {
  subscribed: 'success',
  unconfirmed: 'warning',
  unsubscribed: 'secondary',
  bounced: 'destructive',
  complained: 'destructive',
}

/** A contact status as a coloured label. */
export function StatusBadge({ status }: { status: ContactStatus }) {
  return <Badge variant={STATUS_VARIANT[status] ?? 'outline'}>{status}</Badge>
}

/** The value after it has stopped changing for `ms` (search boxes, the live segment count). */
export function useDebounced<T>(value: T, ms = 350): T {
  const [settled, setSettled] = useState(value)
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms)
    return () => clearTimeout(t)
  }, [value, ms])
  return settled
}

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

/**
 * "Delete X?" answered in an AlertDialog: runs `action`, toasts the outcome, refreshes the
 * queries under `invalidate` and closes.
 */
export function ConfirmDelete({
  open,
  onOpenChange,
  title,
  description,
  confirmLabel = 'Delete',
  action,
  invalidate,
  done,
}: {
  open: boolean
  onOpenChange: (open: boolean) => void
  title: string
  description: ReactNode
  confirmLabel?: string
  action: () => Promise<unknown>
  invalidate: string[]
  done: string
}) {
  const qc = useQueryClient()
  const m = useMutation({
    mutationFn: action,
    onSuccess: async () => {
      toast.success(done)
      onOpenChange(false)
      await Promise.all(invalidate.map((k) => qc.invalidateQueries({ queryKey: [k] })))
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
  return (
    <ConfirmDialog
      open={open}
      onOpenChange={onOpenChange}
      title={title}
      description={description}
      confirmLabel={confirmLabel}
      pendingLabel="Deleting…"
      pending={m.isPending}
      // Stay open until the server has answered.
      keepOpen
      onConfirm={() => m.mutate()}
    />
  )
}
