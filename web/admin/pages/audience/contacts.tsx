import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { ContactIcon, PlusIcon, SearchIcon, Trash2Icon } from 'lucide-react'
import { useEffect, useState } from 'react'
import { toast } from 'sonner'
import { SelectField } from '../../components/select-field'
import { ConfirmDelete } from '../../components/confirm-dialog'
import { DataTable, type Column } from '../../components/data-table'
import { FilterSelect, ListToolbar, QueryFilter, useFiltered } from '../../components/list-toolbar'
import { PageHeader } from '../../components/page-header'
import { ErrorState, LoadingState } from '../../components/states'
import { Button } from '../../components/ui/button'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { SelectItem } from '../../components/ui/select'
import { Separator } from '../../components/ui/separator'
import { Sheet, SheetContent, SheetDescription, SheetTitle } from '../../components/ui/sheet'
import { api, errorMessage, fieldError } from '../../lib/api'
import { can, useSession } from '../../lib/session'
import { useUrlQuery } from '../../lib/url-query'
import { useDebounced } from '../../lib/use-debounced'
import { formatDateTime } from '../../lib/utils'
import { ContactRuns } from '../automations/shared'
import { FieldInput } from './field-input'
import {
  CONTACT_STATUSES,
  StatusBadge,
  useCustomFieldMenu,
  useListMenu,
  useListName,
  type Contact,
  type ContactStatus,
  type CustomField,
  type FieldValue,
  ListField,
} from './shared'

const FILTERS = ['list_id', 'status', 'search', 'field', 'field_value']

/** "Custom field equals": the field, then its value typed by the field. */
function FieldFilter({ fields }: { fields: CustomField[] }) {
  const [params, setParams] = useUrlQuery()
  const key = params.get('field')
  const field = fields.find((f) => f.key === key) ?? null
  const [text, setText] = useState(params.get('field_value') ?? '')
  const settled = useDebounced(text, 300)
  useEffect(() => {
    if (field && field.type !== 'one_of' && field.type !== 'boolean' && settled !== (params.get('field_value') ?? ''))
      setParams({ field_value: settled || null, page: null }, { replace: true })
  }, [settled]) // eslint-disable-line react-hooks/exhaustive-deps
  if (fields.length === 0) return null
  return (
    <div className="flex w-full gap-2 sm:w-auto">
      <FilterSelect
        label="Custom field"
        value={key}
        onChange={(v) => {
          setText('')
          setParams({ field: v, field_value: null, page: null })
        }}
        allLabel="Any custom field"
        options={fields.map((f) => ({ value: f.key, label: f.name }))}
        className="w-full sm:w-44"
      />
      {field ? (
        field.type === 'one_of' || field.type === 'boolean' ? (
          <FilterSelect
            label={`${field.name} is`}
            value={params.get('field_value')}
            onChange={(v) => setParams({ field_value: v, page: null })}
            allLabel="Pick a value"
            options={(field.type === 'boolean' ? ['true', 'false'] : field.options).map((o) => ({ value: o, label: o }))}
            className="w-full sm:w-40"
          />
        ) : (
          <Input
            aria-label={`${field.name} equals`}
            placeholder={field.type === 'date' ? 'YYYY-MM-DD' : 'equals…'}
            type={field.type === 'number' ? 'number' : field.type === 'date' ? 'date' : 'text'}
            value={text}
            onChange={(e) => setText(e.target.value)}
            className="w-full sm:w-40"
          />
        )
      ) : null}
    </div>
  )
}

type Draft = {
  email: string
  list_id: number | null
  first_name: string
  last_name: string
  status: ContactStatus
  fields: Record<string, FieldValue | null>
}

function draftOf(c: Contact | null, fields: CustomField[], listId: number | null): Draft {
  const values: Record<string, FieldValue | null> = {}
  for (const f of fields) values[f.key] = c ? (c.fields[f.key] ?? null) : (f.default_value ?? null)
  return {
    email: c?.email ?? '',
    list_id: c?.list_id ?? listId,
    first_name: c?.first_name ?? '',
    last_name: c?.last_name ?? '',
    status: c?.status ?? 'subscribed',
    fields: values,
  }
}

/** The body of a PATCH: only what changed (fields merge on the server; null clears one). */
function changes(before: Draft, after: Draft): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (after.email.trim() !== before.email) out.email = after.email.trim()
  if (after.first_name !== before.first_name) out.first_name = after.first_name || null
  if (after.last_name !== before.last_name) out.last_name = after.last_name || null
  if (after.status !== before.status) out.status = after.status
  const fields: Record<string, FieldValue | null> = {}
  for (const [k, v] of Object.entries(after.fields)) if (v !== before.fields[k]) fields[k] = v
  if (Object.keys(fields).length) out.fields = fields
  return out
}

/** The contact form: names, status and every custom field as a typed control. */
function ContactForm({ contact, fields, onDone }: { contact: Contact | null; fields: CustomField[]; onDone: () => void }) {
  const qc = useQueryClient()
  const session = useSession()
  const [params] = useUrlQuery()
  const lists = useListMenu()
  const initial = draftOf(contact, fields, Number(params.get('list_id')) || lists.data?.data[0]?.id || null)
  const [draft, setDraft] = useState<Draft>(initial)
  const [deleting, setDeleting] = useState(false)
  const editable = can(session.data?.admin, contact ? 'contacts.update' : 'contacts.create')
  const save = useMutation({
    mutationFn: () => {
      if (contact) return api<Contact>('PATCH', `/api/v2/contacts/${contact.id}`, changes(initial, draft))
      const values = Object.fromEntries(Object.entries(draft.fields).filter(([, v]) => v !== null))
      return api<Contact>('POST', '/api/v2/contacts', {
        email: draft.email.trim(),
        list_id: draft.list_id,
        first_name: draft.first_name || null,
        last_name: draft.last_name || null,
        status: draft.status,
        fields: values,
      })
    },
    onSuccess: async (saved) => {
      toast.success(contact ? `${saved.email} saved` : `${saved.email} added`)
      qc.setQueryData(['contact', saved.id], saved)
      await qc.invalidateQueries({ queryKey: ['contacts'] })
      await qc.invalidateQueries({ queryKey: ['lists'] })
      onDone()
    },
    onError: (e) => {
      const named = ['email', 'list_id', 'first_name', 'last_name', 'status', ...fields.map((f) => `fields.${f.key}`)].some((k) => fieldError(e, k))
      if (!named) toast.error(errorMessage(e))
    },
  })
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => setDraft((d) => ({ ...d, [k]: v }))
  const dirty = contact ? Object.keys(changes(initial, draft)).length > 0 : true
  return (
    <form
      className="grid gap-5"
      onSubmit={(e) => {
        e.preventDefault()
        save.mutate()
      }}
    >
      <fieldset disabled={!editable || save.isPending} className="grid gap-4">
        <FormField label="Email" error={fieldError(save.error, 'email')}>
          <Input type="email" value={draft.email} onChange={(e) => set('email', e.target.value)} required autoComplete="off" />
        </FormField>
        {contact ? null : (
          <ListField
            value={draft.list_id ? String(draft.list_id) : undefined}
            onValueChange={(v) => set('list_id', Number(v))}
            error={fieldError(save.error, 'list_id')}
          />
        )}
        <div className="grid gap-4 sm:grid-cols-2">
          <FormField label="First name" error={fieldError(save.error, 'first_name')}>
            <Input value={draft.first_name} onChange={(e) => set('first_name', e.target.value)} maxLength={200} />
          </FormField>
          <FormField label="Last name" error={fieldError(save.error, 'last_name')}>
            <Input value={draft.last_name} onChange={(e) => set('last_name', e.target.value)} maxLength={200} />
          </FormField>
        </div>
        <FormField label="Status" error={fieldError(save.error, 'status')}>
          <SelectField value={draft.status} onValueChange={(v) => set('status', v as ContactStatus)}>
            {CONTACT_STATUSES.map((s) => (
              <SelectItem key={s} value={s}>
                {s}
              </SelectItem>
            ))}
          </SelectField>
        </FormField>
        {fields.length ? (
          <>
            <Separator />
            <div className="grid gap-1">
              <h3 className="text-sm font-semibold">Custom fields</h3>
              <p className="text-xs text-muted-foreground">Clear a value to remove it from the contact.</p>
            </div>
            {fields.map((f) => (
              <FieldInput
                key={f.key}
                field={f}
                value={draft.fields[f.key] ?? null}
                onChange={(v) => setDraft((d) => ({ ...d, fields: { ...d.fields, [f.key]: v } }))}
                error={fieldError(save.error, `fields.${f.key}`)}
              />
            ))}
          </>
        ) : null}
      </fieldset>
      <div className="flex flex-wrap items-center gap-2">
        {editable ? (
          <Button type="submit" disabled={save.isPending || !dirty}>
            {save.isPending ? 'Saving…' : contact ? 'Save changes' : 'Add contact'}
          </Button>
        ) : null}
        <Button type="button" variant="outline" onClick={onDone}>
          {editable ? 'Cancel' : 'Close'}
        </Button>
        {contact && can(session.data?.admin, 'contacts.delete') ? (
          <Button type="button" variant="ghost" className="ml-auto text-destructive hover:text-destructive" onClick={() => setDeleting(true)}>
            <Trash2Icon /> Delete
          </Button>
        ) : null}
      </div>
      {contact ? (
        <ConfirmDelete
          open={deleting}
          onOpenChange={setDeleting}
          title={`Delete ${contact.email}?`}
          description="The contact leaves this list; its address on other lists is not touched. To stop all mail to the address, suppress it instead."
          confirmLabel="Delete contact"
          action={async () => {
            await api('DELETE', `/api/v2/contacts/${contact.id}`)
            onDone()
          }}
          invalidate={['contacts', 'lists']}
          done="Contact deleted"
        />
      ) : null}
    </form>
  )
}

/** The side sheet of one contact (`?contact=<id>`) or of a new one (`?contact=new`). */
function ContactSheet({ which, onClose }: { which: string; onClose: () => void }) {
  const isNew = which === 'new'
  const id = Number(which)
  const listName = useListName()
  const fields = useCustomFieldMenu()
  const contact = useQuery({ queryKey: ['contact', id], queryFn: () => api<Contact>('GET', `/api/v2/contacts/${id}`), enabled: !isNew && id > 0 })
  const loading = fields.isPending || (!isNew && contact.isPending)
  const error = fields.error ?? (!isNew ? contact.error : null)
  return (
    <Sheet open onOpenChange={(o) => !o && onClose()}>
      <SheetContent side="right" className="w-full overflow-y-auto bg-background p-6 sm:max-w-lg">
        <div className="grid gap-1 pr-6">
          <SheetTitle className="text-lg">{isNew ? 'New contact' : (contact.data?.email ?? 'Contact')}</SheetTitle>
          <SheetDescription>
            {isNew
              ? 'Add one address to a list. For many, import a CSV.'
              : contact.data
                ? `On ${listName(contact.data.list_id)} · added ${formatDateTime(contact.data.created_at)} · changed ${formatDateTime(contact.data.updated_at)}`
                : 'Loading…'}
          </SheetDescription>
        </div>
        {loading ? (
          <LoadingState rows={6} label="Loading the contact" />
        ) : error ? (
          <ErrorState error={error} onRetry={() => (fields.error ? fields.refetch() : contact.refetch())} />
        ) : (
          <>
            <ContactForm key={contact.data?.updated_at ?? 'new'} contact={isNew ? null : contact.data!} fields={fields.data!.data} onDone={onClose} />
            {/* The contact's drip and trigger runs (issue 16). */}
            {!isNew ? <ContactRuns contactId={id} /> : null}
          </>
        )}
      </SheetContent>
    </Sheet>
  )
}

/** Audience › Contacts: search by address prefix, filter by list, status and a custom field; edit in a sheet. */
export function ContactsPage() {
  const session = useSession()
  const [params, setParams] = useUrlQuery()
  const lists = useListMenu()
  const fields = useCustomFieldMenu()
  const listName = useListName()
  const open = params.get('contact')
  const shownFields = (fields.data?.data ?? []).slice(0, 2)
  const filtered = useFiltered(FILTERS)

  const columns: Column<Contact>[] = [
    {
      id: 'email',
      header: 'Email',
      cell: (c) => (
        <button
          type="button"
          className="block max-w-[11rem] truncate text-left font-medium hover:underline focus-visible:underline focus-visible:outline-none sm:max-w-none"
          onClick={() => setParams({ contact: c.id })}
        >
          {c.email}
        </button>
      ),
    },
    {
      id: 'name',
      header: 'Name',
      className: 'hidden md:table-cell',
      cell: (c) => [c.first_name, c.last_name].filter(Boolean).join(' ') || <span className="text-muted-foreground">—</span>,
    },
    { id: 'list', header: 'List', className: 'hidden lg:table-cell', cell: (c) => listName(c.list_id) },
    { id: 'status', header: 'Status', cell: (c) => <StatusBadge status={c.status} /> },
    ...shownFields.map<Column<Contact>>((f) => ({
      id: `field-${f.key}`,
      header: f.name,
      className: 'hidden xl:table-cell',
      cell: (c) => (c.fields[f.key] === undefined ? <span className="text-muted-foreground">—</span> : String(c.fields[f.key])),
    })),
    { id: 'created', header: 'Added', className: 'hidden lg:table-cell text-muted-foreground', cell: (c) => formatDateTime(c.created_at) },
  ]

  const addButton =
    can(session.data?.admin, 'contacts.create') && (lists.data?.data.length ?? 0) > 0 ? (
      <Button onClick={() => setParams({ contact: 'new' })}>
        <PlusIcon /> New contact
      </Button>
    ) : null

  return (
    <div className="grid gap-6">
      <PageHeader title="Contacts" description="Everyone on your lists. Click an address to edit it." actions={addButton} />
      <ListToolbar search={{ id: 'contact-search', label: 'Search by email', placeholder: 'Email starts with…' }} filters={FILTERS}>
        <QueryFilter
          name="list_id"
          label="List"
          allLabel="All lists"
          options={(lists.data?.data ?? []).map((l) => ({ value: String(l.id), label: l.name }))}
          className="w-full sm:w-44"
        />
        <QueryFilter
          name="status"
          label="Status"
          allLabel="Any status"
          options={CONTACT_STATUSES.map((s) => ({ value: s, label: s }))}
          className="w-full sm:w-40"
        />
        <FieldFilter key={params.get('field') ?? ''} fields={fields.data?.data ?? []} />
      </ListToolbar>
      <DataTable
        path="/api/v2/contacts"
        queryKey="contacts"
        columns={columns}
        rowKey={(c) => c.id}
        filters={FILTERS}
        caption="Contacts"
        empty={
          filtered
            ? { icon: SearchIcon, title: 'No contacts match', description: 'Try another address, list, status or field value.' }
            : { icon: ContactIcon, title: 'No contacts yet', description: 'Add a contact, or import a CSV into a list.', action: addButton }
        }
      />
      {open ? <ContactSheet key={open} which={open} onClose={() => setParams({ contact: null })} /> : null}
    </div>
  )
}
