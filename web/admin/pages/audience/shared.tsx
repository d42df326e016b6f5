/**
 * What the audience pages share: the API's record shapes, the lists and custom fields as
 * menus and the contact status badge.
 */
import { useQuery } from '@tanstack/react-query'
import { Badge } from '../../components/ui/badge'
import { FormField } from '../../components/ui/form-field'
import { SelectField } from '../../components/select-field'
import { apiPage } from '../../lib/api'

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
