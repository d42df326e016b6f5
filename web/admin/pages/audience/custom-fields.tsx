import { useMutation, useQueryClient } from '@tanstack/react-query'
import { BracesIcon, PencilIcon, PlusIcon, Trash2Icon } from 'lucide-react'
import { useState } from 'react'
import { toast } from 'sonner'
import { FormDialog } from '../../components/form-dialog'
import { actionsColumn, RowActions } from '../../components/row-actions'
import { SelectField } from '../../components/select-field'
import { DataTable, type Column } from '../../components/data-table'
import { PageHeader } from '../../components/page-header'
import { Badge } from '../../components/ui/badge'
import { Button } from '../../components/ui/button'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { Label } from '../../components/ui/label'
import { SelectItem } from '../../components/ui/select'
import { Switch } from '../../components/ui/switch'
import { Textarea } from '../../components/ui/textarea'
import { reportError } from '../../lib/form-errors'
import { api, fieldError } from '../../lib/api'
import { can, useSession } from '../../lib/session'
import { formatDateTime } from '../../lib/utils'
import { FieldInput } from './field-input'
import { ConfirmDelete } from '../../components/confirm-dialog'
import { type CustomField, type CustomFieldType, type FieldValue } from './shared'

const TYPES: Array<{ value: CustomFieldType; label: string; hint: string }> = [
  { value: 'text', label: 'Text', hint: 'Up to 2,000 characters.' },
  { value: 'number', label: 'Number', hint: 'Any number.' },
  { value: 'date', label: 'Date', hint: 'A calendar date (YYYY-MM-DD).' },
  { value: 'boolean', label: 'Yes / no', hint: 'True or false.' },
  { value: 'one_of', label: 'One of a list', hint: 'One of the options you give.' },
]

/** A key from a name: lower snake case, as the API wants keys. */
function keyFrom(name: string): string {
  return name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^[^a-z]+/, '')
    .replace(/_+$/, '')
    .slice(0, 63)
}

/** Create a field (key, name, type, options, required, default) or edit one (the key and type are fixed). */
function FieldDialog({ field, onClose }: { field: CustomField | null; onClose: () => void }) {
  const qc = useQueryClient()
  const [name, setName] = useState(field?.name ?? '')
  const [key, setKey] = useState(field?.key ?? '')
  const [keyEdited, setKeyEdited] = useState(false)
  const [type, setType] = useState<CustomFieldType>(field?.type ?? 'text')
  const [options, setOptions] = useState((field?.options ?? []).join('\n'))
  const [required, setRequired] = useState(field?.required ?? false)
  const [defaultValue, setDefaultValue] = useState<FieldValue | null>(field?.default_value ?? null)
  const optionList = options
    .split('\n')
    .map((o) => o.trim())
    .filter(Boolean)
  const m = useMutation({
    mutationFn: () => {
      const common = { name, required, default_value: defaultValue, ...(type === 'one_of' ? { options: optionList } : {}) }
      return field
        ? api<CustomField>('PATCH', `/api/v2/custom-fields/${field.id}`, common)
        : api<CustomField>('POST', '/api/v2/custom-fields', { ...common, key, type })
    },
    onSuccess: async (saved) => {
      toast.success(`Field “${saved.name}” saved`)
      onClose()
      await qc.invalidateQueries({ queryKey: ['custom-fields'] })
      await qc.invalidateQueries({ queryKey: ['segment-fields'] })
    },
    onError: (e) => {
      reportError(e, ['name', 'key', 'type', 'options', 'required', 'default_value'], fieldError)
    },
  })
  const preview: CustomField = {
    id: 0,
    key: key || 'default',
    name: 'Default value',
    type,
    options: optionList,
    required: false,
    default_value: null,
    created_at: '',
    updated_at: '',
  }
  return (
    <FormDialog
      open
      onOpenChange={(o) => !o && onClose()}
      title={field ? `Edit “${field.name}”` : 'New custom field'}
      description={
        field ? 'The key and the type are fixed once a field exists.' : 'A value every contact can carry, usable in imports, templates and segments.'
      }
      onSubmit={() => m.mutate()}
      onCancel={onClose}
      submitLabel={m.isPending ? 'Saving…' : field ? 'Save' : 'Create field'}
      submitDisabled={m.isPending}
      className="max-h-[calc(100dvh-2rem)] overflow-y-auto"
    >
      <FormField label="Name" error={fieldError(m.error, 'name')}>
        <Input
          value={name}
          autoFocus
          required
          maxLength={200}
          onChange={(e) => {
            setName(e.target.value)
            if (!field && !keyEdited) setKey(keyFrom(e.target.value))
          }}
        />
      </FormField>
      <FormField
        label="Key"
        hint="Lower snake case, e.g. signup_source. Names the value in contacts, imports and segment rules."
        error={fieldError(m.error, 'key')}
      >
        <Input
          value={key}
          className="font-mono"
          required
          maxLength={63}
          disabled={!!field}
          onChange={(e) => {
            setKeyEdited(true)
            setKey(e.target.value)
          }}
        />
      </FormField>
      <FormField label="Type" hint={TYPES.find((t) => t.value === type)?.hint} error={fieldError(m.error, 'type')}>
        <SelectField
          value={type}
          disabled={!!field}
          onValueChange={(v) => {
            setType(v as CustomFieldType)
            setDefaultValue(null)
          }}
        >
          {TYPES.map((t) => (
            <SelectItem key={t.value} value={t.value}>
              {t.label}
            </SelectItem>
          ))}
        </SelectField>
      </FormField>
      {type === 'one_of' ? (
        <FormField label="Options" hint="One per line." error={fieldError(m.error, 'options')}>
          <Textarea value={options} onChange={(e) => setOptions(e.target.value)} rows={4} placeholder={'free\npro\nteam'} />
        </FormField>
      ) : null}
      <FieldInput
        key={`${type}-${optionList.join('|')}`}
        field={preview}
        value={defaultValue}
        onChange={setDefaultValue}
        error={fieldError(m.error, 'default_value')}
      />
      <div className="flex items-start gap-3">
        <Switch id="field-required" checked={required} onCheckedChange={setRequired} aria-describedby="field-required-hint" />
        <div className="grid gap-1">
          <Label htmlFor="field-required">Required</Label>
          <p id="field-required-hint" className="text-xs text-muted-foreground">
            Every contact must have a value. Needs a default value, which existing contacts receive.
          </p>
          {fieldError(m.error, 'required') ? (
            <p role="alert" className="text-sm text-destructive">
              {fieldError(m.error, 'required')}
            </p>
          ) : null}
        </div>
      </div>
    </FormDialog>
  )
}

/** Audience › Custom fields: the extra values contacts carry, with their types. */
export function CustomFieldsPage() {
  const session = useSession()
  const admin = session.data?.admin
  const [editing, setEditing] = useState<{ field: CustomField | null } | null>(null)
  const [deleting, setDeleting] = useState<CustomField | null>(null)
  const columns: Column<CustomField>[] = [
    { id: 'name', header: 'Name', cell: (f) => <span className="font-medium">{f.name}</span> },
    { id: 'key', header: 'Key', cell: (f) => <code className="rounded bg-muted px-1.5 py-0.5 font-mono text-xs">{f.key}</code> },
    { id: 'type', header: 'Type', cell: (f) => <Badge variant="secondary">{TYPES.find((t) => t.value === f.type)?.label ?? f.type}</Badge> },
    {
      id: 'options',
      header: 'Options',
      className: 'hidden md:table-cell',
      cell: (f) =>
        f.type === 'one_of' ? (
          <span className="line-clamp-1 max-w-xs text-muted-foreground">{f.options.join(', ')}</span>
        ) : (
          <span className="text-muted-foreground">—</span>
        ),
    },
    {
      id: 'required',
      header: 'Required',
      className: 'hidden sm:table-cell',
      cell: (f) => (f.required ? <Badge>required</Badge> : <span className="text-muted-foreground">no</span>),
    },
    {
      id: 'default',
      header: 'Default',
      className: 'hidden lg:table-cell',
      cell: (f) => (f.default_value === null ? <span className="text-muted-foreground">—</span> : String(f.default_value)),
    },
    { id: 'updated', header: 'Changed', className: 'hidden xl:table-cell text-muted-foreground', cell: (f) => formatDateTime(f.updated_at) },
    actionsColumn((f) => (
      <RowActions
        name={f.name}
        actions={[
          { label: 'Edit', icon: PencilIcon, onSelect: () => setEditing({ field: f }), hidden: !can(admin, 'custom_fields.update') },
          { label: 'Delete', icon: Trash2Icon, onSelect: () => setDeleting(f), hidden: !can(admin, 'custom_fields.delete'), destructive: true },
        ]}
      />
    )),
  ]
  const newButton = can(admin, 'custom_fields.create') ? (
    <Button onClick={() => setEditing({ field: null })}>
      <PlusIcon /> New field
    </Button>
  ) : null
  return (
    <div className="grid gap-6">
      <PageHeader title="Custom fields" description="Extra data kept on each contact, checked by type on every write." actions={newButton} />
      <DataTable
        path="/api/v2/custom-fields"
        queryKey="custom-fields"
        columns={columns}
        rowKey={(f) => f.id}
        caption="Custom fields"
        empty={{ icon: BracesIcon, title: 'No custom fields yet', description: 'Add fields such as plan, company or signup date.', action: newButton }}
      />
      {editing ? <FieldDialog key={editing.field?.id ?? 'new'} field={editing.field} onClose={() => setEditing(null)} /> : null}
      <ConfirmDelete
        open={deleting !== null}
        onOpenChange={(o) => !o && setDeleting(null)}
        title={`Delete “${deleting?.name ?? ''}”?`}
        description={
          <>
            Every contact’s <code className="font-mono">{deleting?.key}</code> value is removed with it, and segments using it stop counting until their rules
            change. This cannot be undone.
          </>
        }
        confirmLabel="Delete field"
        action={() => api('DELETE', `/api/v2/custom-fields/${deleting!.id}`)}
        invalidate={['custom-fields', 'segment-fields', 'contacts']}
        done="Field deleted"
      />
    </div>
  )
}
