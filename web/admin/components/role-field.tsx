import { useAllRoles } from '../lib/roles'
import { SelectField } from './select-field'
import { FormField } from './ui/form-field'

/** The labelled role picker (API keys, administrators): every role by name, the value is its id. */
export function RoleField({ value, onChange, hint, error }: { value: string; onChange: (v: string) => void; hint: string; error?: string }) {
  const roles = useAllRoles()
  return (
    <FormField label="Role" hint={hint} error={error}>
      <SelectField
        value={value}
        onValueChange={onChange}
        placeholder={roles.isPending ? 'Loading roles…' : 'Choose a role'}
        options={(roles.data ?? []).map((r) => ({ value: String(r.id), label: r.name }))}
      />
    </FormField>
  )
}
