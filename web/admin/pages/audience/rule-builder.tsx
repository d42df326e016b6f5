/**
 * The segment rule builder: groups (all / any) of conditions, as the segments API takes
 * them (docs/api.md "Segments"). The fields, their types, operators and allowed values come
 * from GET /api/v2/segments/fields, so the builder offers exactly what the compiler accepts.
 */
import { FolderTreeIcon, PlusIcon, Trash2Icon } from 'lucide-react'
import { useId } from 'react'
import { Button } from '../../components/ui/button'
import { Checkbox } from '../../components/ui/checkbox'
import { Input } from '../../components/ui/input'
import { Label } from '../../components/ui/label'
import { SelectField } from '../../components/select-field'
import { Select, SelectContent, SelectGroup, SelectItem, SelectTrigger, SelectValue } from '../../components/ui/select'
import { cn } from '../../lib/utils'
import type { MailingList } from './shared'

export type FieldType = 'text' | 'number' | 'date' | 'timestamp' | 'boolean' | 'status' | 'list_id' | 'one_of'
export interface SegmentField {
  field: string
  name: string
  type: FieldType
  operators: string[]
  options: string[] | null
}

export interface Group {
  kind: 'group'
  id: number
  match: 'all' | 'any'
  items: RuleNode[]
}
export interface Condition {
  kind: 'condition'
  id: number
  /** A field name, or the list conditions `in_list` / `not_in_list`. */
  field: string
  op: string
  value: unknown
}
export type RuleNode = Group | Condition

/** Groups nest at most this deep in the builder (the API allows 5; deeper trees are rarely what people mean). */
const MAX_BUILDER_DEPTH = 3
const LIST_CONDITIONS = ['in_list', 'not_in_list']

let nextId = 1
const newId = () => nextId++

/** A group with nothing in it yet. */
export function emptyGroup(match: 'all' | 'any' = 'all'): Group {
  return { kind: 'group', id: newId(), match, items: [] }
}

/** The tree the API stores, as builder nodes. */
export function fromRules(rules: unknown): Group {
  const node = (n: unknown): RuleNode => {
    const o = (n ?? {}) as Record<string, unknown>
    if (Array.isArray(o.all) || Array.isArray(o.any)) {
      const match = Array.isArray(o.all) ? 'all' : 'any'
      return { kind: 'group', id: newId(), match, items: (o[match] as unknown[]).map(node) }
    }
    if ('in_list' in o) return { kind: 'condition', id: newId(), field: 'in_list', op: 'eq', value: o.in_list }
    if ('not_in_list' in o) return { kind: 'condition', id: newId(), field: 'not_in_list', op: 'eq', value: o.not_in_list }
    return { kind: 'condition', id: newId(), field: String(o.field ?? ''), op: String(o.op ?? 'eq'), value: o.value }
  }
  const root = node(rules)
  return root.kind === 'group' ? root : { kind: 'group', id: newId(), match: 'all', items: [root] }
}

/** Builder nodes as the API's rule tree. */
export function toRules(node: RuleNode): unknown {
  if (node.kind === 'group') return { [node.match]: node.items.map(toRules) }
  if (LIST_CONDITIONS.includes(node.field)) return { [node.field]: node.value }
  if (node.op === 'is_set' || node.op === 'is_not_set') return { field: node.field, op: node.op }
  return { field: node.field, op: node.op, value: node.value }
}

/** How many conditions a tree holds. */
export function countConditions(node: RuleNode): number {
  return node.kind === 'group' ? node.items.reduce((n, i) => n + countConditions(i), 0) : 1
}

const WORDS: Record<string, string> = {
  eq: 'is',
  neq: 'is not',
  in: 'is any of',
  not_in: 'is none of',
  contains: 'contains',
  not_contains: 'does not contain',
  starts_with: 'starts with',
  ends_with: 'ends with',
  gt: 'is greater than',
  gte: 'is at least',
  lt: 'is less than',
  lte: 'is at most',
  between: 'is between',
  is_set: 'has a value',
  is_not_set: 'has no value',
}
const TIME_WORDS: Record<string, string> = { gt: 'is after', gte: 'is on or after', lt: 'is before', lte: 'is on or before' }

function opLabel(op: string, type: FieldType | undefined): string {
  return (type === 'date' || type === 'timestamp' ? TIME_WORDS[op] : undefined) ?? WORDS[op] ?? op
}

/** A fresh value for a field and operator: the first option, today, or empty. */
function defaultValue(f: SegmentField | undefined, op: string, lists: MailingList[]): unknown {
  if (!f) return lists[0]?.id ?? null
  if (op === 'is_set' || op === 'is_not_set') return undefined
  const one = (): unknown => {
    switch (f.type) {
      case 'status':
      case 'one_of':
        return f.options?.[0] ?? ''
      case 'boolean':
        return true
      case 'list_id':
        return lists[0]?.id ?? null
      case 'number':
        return 0
      case 'date':
      case 'timestamp':
        return { days_ago: 30 }
      default:
        return ''
    }
  }
  if (op === 'in' || op === 'not_in') return f.type === 'text' ? [] : [one()]
  if (op === 'between') return [one(), one()]
  return one()
}

export interface BuilderContext {
  fields: SegmentField[]
  lists: MailingList[]
  /** Error messages by the API's path (`rules.all.0.value`). */
  errors: Record<string, string[]>
  disabled?: boolean
}

/** Messages for a node: at its path and below it (a group's own errors stay with the group). */
function errorsAt(errors: Record<string, string[]>, path: string, deep: boolean): string[] {
  return Object.entries(errors)
    .filter(([k]) => k === path || (deep && k.startsWith(path + '.')))
    .flatMap(([, v]) => v)
}

/** A date or timestamp value: a calendar date, or n days ago / from now (stored relative). */
function TimeValue({ value, onChange, label, disabled }: { value: unknown; onChange: (v: unknown) => void; label: string; disabled?: boolean }) {
  const rel = value && typeof value === 'object' ? (value as Record<string, number>) : null
  const mode = rel ? ('days_ago' in rel ? 'days_ago' : 'days_from_now') : 'date'
  const n = rel ? (rel.days_ago ?? rel.days_from_now ?? 0) : 0
  return (
    <div className="flex gap-2">
      {mode !== 'date' ? (
        <Input
          type="number"
          min={0}
          aria-label={`${label}: days`}
          className="w-20"
          value={String(n)}
          disabled={disabled}
          onChange={(e) => onChange({ [mode]: Math.max(0, Math.trunc(Number(e.target.value) || 0)) })}
        />
      ) : (
        <Input
          type="date"
          aria-label={`${label}: date`}
          className="w-40"
          value={typeof value === 'string' ? value.slice(0, 10) : ''}
          disabled={disabled}
          onChange={(e) => onChange(e.target.value)}
        />
      )}
      <Select value={mode} disabled={disabled} onValueChange={(m) => onChange(m === 'date' ? new Date().toISOString().slice(0, 10) : { [m]: n || 30 })}>
        <SelectTrigger className="w-36" aria-label={`${label}: kind of date`}>
          <SelectValue />
        </SelectTrigger>
        <SelectContent>
          <SelectItem value="days_ago">days ago</SelectItem>
          <SelectItem value="days_from_now">days from now</SelectItem>
          <SelectItem value="date">on a date</SelectItem>
        </SelectContent>
      </Select>
    </div>
  )
}

/** One value for a field type. */
function SingleValue({
  f,
  value,
  onChange,
  lists,
  label,
  disabled,
}: {
  f: SegmentField
  value: unknown
  onChange: (v: unknown) => void
  lists: MailingList[]
  label: string
  disabled?: boolean
}) {
  const choice = (options: Array<{ value: string; label: string }>, current: string, parse: (v: string) => unknown) => (
    <SelectField
      value={current}
      onValueChange={(v) => onChange(parse(v))}
      disabled={disabled}
      className="w-full sm:w-48"
      aria-label={label}
      placeholder="Choose"
      options={options}
    />
  )
  switch (f.type) {
    case 'status':
    case 'one_of':
      return choice(
        (f.options ?? []).map((o) => ({ value: o, label: o })),
        String(value ?? ''),
        (v) => v,
      )
    case 'boolean':
      return choice(
        [
          { value: 'true', label: 'yes' },
          { value: 'false', label: 'no' },
        ],
        String(value),
        (v) => v === 'true',
      )
    case 'list_id':
      return choice(
        lists.map((l) => ({ value: String(l.id), label: l.name })),
        value == null ? '' : String(value),
        Number,
      )
    case 'number':
      return (
        <Input
          type="number"
          step="any"
          aria-label={label}
          className="w-full sm:w-32"
          value={value === null || value === undefined ? '' : String(value)}
          disabled={disabled}
          onChange={(e) => onChange(e.target.value === '' ? null : Number(e.target.value))}
        />
      )
    case 'date':
    case 'timestamp':
      return <TimeValue value={value} onChange={onChange} label={label} disabled={disabled} />
    default:
      return (
        <Input
          aria-label={label}
          className="w-full sm:w-56"
          value={typeof value === 'string' ? value : ''}
          disabled={disabled}
          onChange={(e) => onChange(e.target.value)}
        />
      )
  }
}

/** The value part of a condition, by operator: none, one, two (between) or several (in). */
function ValueEditor({
  f,
  op,
  value,
  onChange,
  lists,
  disabled,
}: {
  f: SegmentField
  op: string
  value: unknown
  onChange: (v: unknown) => void
  lists: MailingList[]
  disabled?: boolean
}) {
  const idPrefix = useId()
  if (op === 'is_set' || op === 'is_not_set') return null
  if (op === 'between') {
    const pair = Array.isArray(value) ? value : [null, null]
    return (
      <div className="flex flex-wrap items-center gap-2">
        <SingleValue f={f} value={pair[0]} onChange={(v) => onChange([v, pair[1]])} lists={lists} label={`${f.name} from`} disabled={disabled} />
        <span className="text-sm text-muted-foreground">and</span>
        <SingleValue f={f} value={pair[1]} onChange={(v) => onChange([pair[0], v])} lists={lists} label={`${f.name} to`} disabled={disabled} />
      </div>
    )
  }
  if (op === 'in' || op === 'not_in') {
    const values = Array.isArray(value) ? value : []
    const options =
      f.type === 'list_id' ? lists.map((l) => ({ value: l.id as unknown, label: l.name })) : f.options?.map((o) => ({ value: o as unknown, label: o }))
    if (options) {
      return (
        <div className="flex flex-wrap gap-x-4 gap-y-2" role="group" aria-label={`${f.name} values`}>
          {options.map((o) => {
            const checked = values.includes(o.value)
            const id = `${idPrefix}-${String(o.value)}`
            return (
              <div key={String(o.value)} className="flex items-center gap-2">
                <Checkbox
                  id={id}
                  checked={checked}
                  disabled={disabled}
                  onCheckedChange={(c) => onChange(c ? [...values, o.value] : values.filter((v) => v !== o.value))}
                />
                <Label htmlFor={id} className="font-normal">
                  {o.label}
                </Label>
              </div>
            )
          })}
        </div>
      )
    }
    // Text or numbers: one per comma.
    return (
      <Input
        aria-label={`${f.name} values, separated by commas`}
        placeholder="a, b, c"
        className="w-full sm:w-72"
        defaultValue={values.join(', ')}
        disabled={disabled}
        onChange={(e) => {
          const parts = e.target.value
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
          onChange(f.type === 'number' ? parts.map(Number) : parts)
        }}
      />
    )
  }
  return <SingleValue f={f} value={value} onChange={onChange} lists={lists} label={`${f.name} value`} disabled={disabled} />
}

function ConditionRow({
  node,
  path,
  ctx,
  onChange,
  onRemove,
}: {
  node: Condition
  path: string
  ctx: BuilderContext
  onChange: (n: Condition) => void
  onRemove: () => void
}) {
  const isList = LIST_CONDITIONS.includes(node.field)
  const f = ctx.fields.find((x) => x.field === node.field)
  const messages = errorsAt(ctx.errors, path, true)
  const builtin = ctx.fields.filter((x) => !x.field.startsWith('fields.'))
  const custom = ctx.fields.filter((x) => x.field.startsWith('fields.'))
  return (
    <div className={cn('grid gap-2 rounded-lg border bg-card p-3', messages.length && 'border-destructive/60')} data-testid="rule-condition">
      <div className="flex flex-wrap items-start gap-2">
        <Select
          value={node.field}
          disabled={ctx.disabled}
          onValueChange={(field) => {
            const nf = ctx.fields.find((x) => x.field === field)
            const op = LIST_CONDITIONS.includes(field) ? 'eq' : (nf?.operators[0] ?? 'eq')
            onChange({ ...node, field, op, value: defaultValue(nf, op, ctx.lists) })
          }}
        >
          <SelectTrigger className="w-full sm:w-48" aria-label="Field">
            <SelectValue placeholder="Choose a field" />
          </SelectTrigger>
          <SelectContent>
            <SelectGroup>
              {builtin.map((x) => (
                <SelectItem key={x.field} value={x.field}>
                  {x.name}
                </SelectItem>
              ))}
            </SelectGroup>
            {custom.length ? (
              <SelectGroup>
                {custom.map((x) => (
                  <SelectItem key={x.field} value={x.field}>
                    {x.name}
                  </SelectItem>
                ))}
              </SelectGroup>
            ) : null}
            <SelectGroup>
              <SelectItem value="in_list">Also on list</SelectItem>
              <SelectItem value="not_in_list">Not on list</SelectItem>
            </SelectGroup>
          </SelectContent>
        </Select>
        {isList ? (
          <Select value={node.value == null ? '' : String(node.value)} onValueChange={(v) => onChange({ ...node, value: Number(v) })} disabled={ctx.disabled}>
            <SelectTrigger className="w-full sm:w-56" aria-label="List">
              <SelectValue placeholder="Choose a list" />
            </SelectTrigger>
            <SelectContent>
              {ctx.lists.map((l) => (
                <SelectItem key={l.id} value={String(l.id)}>
                  {l.name}
                </SelectItem>
              ))}
            </SelectContent>
          </Select>
        ) : f ? (
          <>
            <Select
              value={node.op}
              disabled={ctx.disabled}
              onValueChange={(op) => {
                const shapeChanged = ['in', 'not_in', 'between', 'is_set', 'is_not_set'].some((o) => o === op || o === node.op)
                onChange({ ...node, op, value: shapeChanged ? defaultValue(f, op, ctx.lists) : node.value })
              }}
            >
              <SelectTrigger className="w-full sm:w-44" aria-label="Operator">
                <SelectValue />
              </SelectTrigger>
              <SelectContent>
                {f.operators.map((op) => (
                  <SelectItem key={op} value={op}>
                    {opLabel(op, f.type)}
                  </SelectItem>
                ))}
              </SelectContent>
            </Select>
            <ValueEditor
              key={`${node.field}-${node.op}`}
              f={f}
              op={node.op}
              value={node.value}
              onChange={(value) => onChange({ ...node, value })}
              lists={ctx.lists}
              disabled={ctx.disabled}
            />
          </>
        ) : null}
        <Button type="button" variant="ghost" size="icon" className="ml-auto" aria-label="Remove this condition" onClick={onRemove} disabled={ctx.disabled}>
          <Trash2Icon />
        </Button>
      </div>
      {messages.length ? (
        <p role="alert" className="text-sm text-destructive">
          {messages.join(' ')}
        </p>
      ) : null}
    </div>
  )
}

/** A group: whether all or any of its items must match, its items, and buttons to add more. */
export function GroupEditor({
  node,
  path,
  depth = 1,
  ctx,
  onChange,
  onRemove,
}: {
  node: Group
  path: string
  depth?: number
  ctx: BuilderContext
  onChange: (g: Group) => void
  onRemove?: () => void
}) {
  const itemsPath = `${path}.${node.match}`
  const own = errorsAt(ctx.errors, path, false).concat(errorsAt(ctx.errors, itemsPath, false))
  const firstField = ctx.fields.find((f) => f.field === 'status') ?? ctx.fields[0]
  const addCondition = () => {
    const op = firstField?.operators[0] ?? 'eq'
    onChange({
      ...node,
      items: [...node.items, { kind: 'condition', id: newId(), field: firstField?.field ?? 'status', op, value: defaultValue(firstField, op, ctx.lists) }],
    })
  }
  return (
    <div
      className={cn('grid gap-3', depth > 1 && 'rounded-xl border border-dashed bg-muted/40 p-3')}
      role="group"
      aria-label={depth === 1 ? 'Rules' : 'Group of rules'}
    >
      <div className="flex flex-wrap items-center gap-2 text-sm">
        <span>{depth === 1 ? 'Contacts matching' : 'Matching'}</span>
        <Select value={node.match} onValueChange={(m) => onChange({ ...node, match: m as 'all' | 'any' })} disabled={ctx.disabled}>
          <SelectTrigger className="h-8 w-24" aria-label={depth === 1 ? 'Match all or any of the rules' : 'Match all or any in this group'}>
            <SelectValue />
          </SelectTrigger>
          <SelectContent>
            <SelectItem value="all">all</SelectItem>
            <SelectItem value="any">any</SelectItem>
          </SelectContent>
        </Select>
        <span>of these:</span>
        {onRemove ? (
          <Button type="button" variant="ghost" size="sm" className="ml-auto" onClick={onRemove} disabled={ctx.disabled}>
            <Trash2Icon /> Remove group
          </Button>
        ) : null}
      </div>
      {node.items.map((item, i) => {
        const childPath = `${itemsPath}.${i}`
        const replace = (n: RuleNode) => onChange({ ...node, items: node.items.map((x) => (x.id === item.id ? n : x)) })
        const remove = () => onChange({ ...node, items: node.items.filter((x) => x.id !== item.id) })
        return (
          <div key={item.id} className="grid gap-3">
            {i > 0 ? (
              <span className="text-xs font-semibold tracking-wide text-muted-foreground uppercase" aria-hidden="true">
                {node.match === 'all' ? 'and' : 'or'}
              </span>
            ) : null}
            {item.kind === 'group' ? (
              <GroupEditor node={item} path={childPath} depth={depth + 1} ctx={ctx} onChange={replace} onRemove={remove} />
            ) : (
              <ConditionRow node={item} path={childPath} ctx={ctx} onChange={replace} onRemove={remove} />
            )}
          </div>
        )
      })}
      {node.items.length === 0 ? <p className="text-sm text-muted-foreground">No conditions yet: add one.</p> : null}
      {own.length ? (
        <p role="alert" className="text-sm text-destructive">
          {own.join(' ')}
        </p>
      ) : null}
      <div className="flex flex-wrap gap-2">
        <Button type="button" variant="outline" size="sm" onClick={addCondition} disabled={ctx.disabled}>
          <PlusIcon /> Add condition
        </Button>
        {depth < MAX_BUILDER_DEPTH ? (
          <Button
            type="button"
            variant="ghost"
            size="sm"
            disabled={ctx.disabled}
            onClick={() => onChange({ ...node, items: [...node.items, { ...emptyGroup(node.match === 'all' ? 'any' : 'all') }] })}
          >
            <FolderTreeIcon /> Add group
          </Button>
        ) : null}
      </div>
    </div>
  )
}
