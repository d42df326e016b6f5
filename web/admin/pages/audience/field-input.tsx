import { SelectField } from '../../components/select-field'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { SelectItem } from '../../components/ui/select'
import { type CustomField, type FieldValue } from './shared'

const UNSET = '__unset'

/**
 * One custom field's value as a control typed by the field: text, a number, a date picker,
 * yes/no, or a select of a one_of field's options. `null` is "no value" (the API clears it).
 */
export function FieldInput({
  field,
  value,
  onChange,
  error,
  id,
}: {
  field: CustomField
  value: FieldValue | null
  onChange: (v: FieldValue | null) => void
  error?: string
  id?: string
}) {
  const label = (
    <span>
      {field.name}
      {field.required ? <span className="text-muted-foreground"> (required)</span> : null}
      <span className="ml-2 font-mono text-xs font-normal text-muted-foreground">{field.key}</span>
    </span>
  )
  const choice = (options: Array<{ value: string; label: string }>, current: string | null, parse: (v: string) => FieldValue) => (
    <FormField label={label} error={error} id={id}>
      <SelectField value={current ?? UNSET} onValueChange={(v) => onChange(v === UNSET ? null : parse(v))}>
        {field.required ? null : <SelectItem value={UNSET}>No value</SelectItem>}
        {options.map((o) => (
          <SelectItem key={o.value} value={o.value}>
            {o.label}
          </SelectItem>
        ))}
      </SelectField>
    </FormField>
  )
  switch (field.type) {
    case 'one_of':
      return choice(
        field.options.map((o) => ({ value: o, label: o })),
        value === null ? null : String(value),
        (v) => v,
      )
    case 'boolean':
      return choice(
        [
          { value: 'true', label: 'Yes' },
          { value: 'false', label: 'No' },
        ],
        value === null ? null : String(value),
        (v) => v === 'true',
      )
    case 'number':
      return (
        <FormField label={label} error={error} id={id}>
          <Input
            type="number"
            inputMode="decimal"
            step="any"
            value={value === null ? '' : String(value)}
            onChange={(e) => onChange(e.target.value === '' ? null : Number(e.target.value))}
          />
        </FormField>
      )
    case 'date':
      return (
        <FormField label={label} error={error} id={id}>
          <Input type="date" value={value === null ? '' : String(value)} onChange={(e) => onChange(e.target.value === '' ? null : e.target.value)} />
        </FormField>
      )
    default:
      return (
        <FormField label={label} error={error} id={id}>
          <Input value={value === null ? '' : String(value)} maxLength={2000} onChange={(e) => onChange(e.target.value === '' ? null : e.target.value)} />
        </FormField>
      )
  }
}
