import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { ArrowLeftIcon, CheckCircle2Icon, DownloadIcon, FileUpIcon, LoaderIcon, UploadIcon, XCircleIcon } from 'lucide-react'
import { useEffect, useRef, useState } from 'react'
import { toast } from 'sonner'
import { Link, Route, Switch, useLocation, useParams } from 'wouter'
import { SelectField } from '../../components/select-field'
import { DataTable, type Column } from '../../components/data-table'
import { PageHeader } from '../../components/page-header'
import { EmptyState, ErrorState, LoadingState } from '../../components/states'
import { Badge } from '../../components/ui/badge'
import { Button } from '../../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../../components/ui/card'
import { Checkbox } from '../../components/ui/checkbox'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { Label } from '../../components/ui/label'
import { Progress } from '../../components/ui/progress'
import { SelectItem } from '../../components/ui/select'
import { Table, TableBody, TableCell, TableHead, TableHeader, TableRow } from '../../components/ui/table'
import { reportError } from '../../lib/form-errors'
import { api, apiPage, apiUpload, fieldError } from '../../lib/api'
import { useUrlQuery } from '../../lib/url-query'
import { cn, formatDateTime, formatNumber } from '../../lib/utils'
import { useCustomFieldMenu, useListMenu, useListName, ListField } from './shared'

interface Import {
  id: number
  list_id: number
  format: 'csv' | 'jsonl'
  mode: 'skip' | 'update'
  /** Whether contacts the import subscribes start the list's drips. */
  enroll: boolean
  mapping: Record<string, string>
  status: 'queued' | 'running' | 'completed' | 'failed'
  total_rows: number | null
  rows_done: number
  created: number
  updated: number
  skipped: number
  invalid: number
  error: string | null
  file_bytes: number
  created_at: string
  started_at: string | null
  finished_at: string | null
}

interface ImportError {
  row: number
  reason: string
  raw: string
}

const ACTIVE = new Set(['queued', 'running'])
/** How often a running import is asked for its progress. */
const POLL_MS = 400

function ImportStatus({ status }: { status: Import['status'] }) {
  const variant = status === 'completed' ? 'success' : status === 'failed' ? 'destructive' : status === 'running' ? 'default' : 'secondary'
  return <Badge variant={variant}>{status}</Badge>
}

/** Bytes in words (1.2 MB). */
function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`
  const units = ['KB', 'MB', 'GB']
  let v = n / 1024
  let i = 0
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`
}

/**
 * The CSV header (the first record of the file), split by RFC 4180 quoting; only to offer
 * the columns in the mapping menus. The server reads and checks the file itself.
 */
async function readHeader(file: File): Promise<string[]> {
  const head = await file.slice(0, 64 * 1024).text()
  const out: string[] = []
  let cell = ''
  let quoted = false
  for (let i = 0; i < head.length; i++) {
    const ch = head[i]!
    if (quoted) {
      if (ch === '"' && head[i + 1] === '"') {
        cell += '"'
        i++
      } else if (ch === '"') quoted = false
      else cell += ch
    } else if (ch === '"') quoted = true
    else if (ch === ',') {
      out.push(cell)
      cell = ''
    } else if (ch === '\n' || ch === '\r') break
    else cell += ch
  }
  out.push(cell)
  return out.map((c) => c.replace(/^\uFEFF/, '').trim()).filter((c) => c !== '')
}

const SKIP = '__skip'

/** The upload card: list, mode, file, and which column fills which attribute. */
function UploadCard() {
  const [params] = useUrlQuery()
  const [, navigate] = useLocation()
  const qc = useQueryClient()
  const lists = useListMenu()
  const customFields = useCustomFieldMenu()
  const [listId, setListId] = useState<string | undefined>(params.get('list_id') ?? undefined)
  const [mode, setMode] = useState<'skip' | 'update'>('skip')
  const [enroll, setEnroll] = useState(true)
  const [file, setFile] = useState<File | null>(null)
  const [columns, setColumns] = useState<string[]>([])
  const [mapping, setMapping] = useState<Record<string, string>>({})
  const [mappingTouched, setMappingTouched] = useState(false)

  const attributes = [
    { key: 'email', label: 'Email (required)' },
    { key: 'first_name', label: 'First name' },
    { key: 'last_name', label: 'Last name' },
    { key: 'status', label: 'Status' },
    ...(customFields.data?.data ?? []).map((f) => ({ key: `fields.${f.key}`, label: f.name })),
  ]

  const choose = async (f: File | null) => {
    setFile(f)
    setMappingTouched(false)
    if (!f) return setColumns([])
    const header = await readHeader(f)
    setColumns(header)
    // The server's own default: a column named like the attribute or the custom field's key.
    const auto: Record<string, string> = {}
    for (const a of attributes) {
      const bare = a.key.replace(/^fields\./, '')
      const hit = header.find((h) => h.toLowerCase() === bare.toLowerCase())
      if (hit) auto[a.key] = hit
    }
    setMapping(auto)
  }

  const upload = useMutation({
    mutationFn: async () => {
      const qs = new URLSearchParams({ list_id: listId ?? '', mode })
      if (mappingTouched) qs.set('mapping', JSON.stringify(mapping))
      if (!enroll) qs.set('enroll', 'false')
      const type = file!.name.toLowerCase().endsWith('.jsonl') || file!.name.toLowerCase().endsWith('.ndjson') ? 'application/x-ndjson' : 'text/csv'
      return apiUpload<Import>(`/api/v2/imports?${qs}`, file!, type)
    },
    onSuccess: async (imp) => {
      toast.success(`Import #${imp.id} started`)
      await qc.invalidateQueries({ queryKey: ['imports'] })
      qc.setQueryData(['import', imp.id], imp)
      navigate(`/${imp.id}`)
    },
    onError: (e) => {
      reportError(e, ['list_id', 'mode', 'mapping', 'file'], fieldError)
    },
  })

  if (lists.isSuccess && lists.data.data.length === 0)
    return (
      <EmptyState
        icon={UploadIcon}
        title="Create a list first"
        description="Contacts are imported into a list."
        action={
          <Button asChild variant="outline">
            <Link href="~/admin/audience/lists">Go to lists</Link>
          </Button>
        }
      />
    )

  return (
    <Card>
      <CardHeader>
        <CardTitle>Import a file</CardTitle>
        <CardDescription>
          A CSV with a header row (UTF-8, comma-separated), or JSON lines. Invalid rows are skipped and listed, to download and fix.
        </CardDescription>
      </CardHeader>
      <CardContent>
        <form
          className="grid gap-5"
          onSubmit={(e) => {
            e.preventDefault()
            upload.mutate()
          }}
        >
          <div className="grid gap-4 md:grid-cols-3">
            <ListField value={listId} onValueChange={setListId} error={fieldError(upload.error, 'list_id')} />
            <FormField label="Addresses already on the list" error={fieldError(upload.error, 'mode')}>
              <SelectField value={mode} onValueChange={(v) => setMode(v as 'skip' | 'update')}>
                <SelectItem value="skip">Skip them</SelectItem>
                <SelectItem value="update">Update them with the file’s values</SelectItem>
              </SelectField>
            </FormField>
            <FormField label="File" error={fieldError(upload.error, 'file')} hint={file ? `${file.name}, ${formatBytes(file.size)}` : undefined}>
              <Input
                type="file"
                accept=".csv,text/csv,.jsonl,.ndjson"
                onChange={(e) => void choose(e.target.files?.[0] ?? null)}
                className="pt-1.5 file:mr-3"
              />
            </FormField>
          </div>
          <Label className="flex items-start gap-2.5 font-normal">
            <Checkbox checked={enroll} onCheckedChange={(c) => setEnroll(c === true)} className="mt-0.5" />
            <span className="grid gap-0.5">
              <span className="font-medium">Start the list’s drips</span>
              <span className="text-xs text-muted-foreground">Contacts this import subscribes enter the drips that start when someone joins the list.</span>
            </span>
          </Label>
          {columns.length ? (
            <fieldset className="grid gap-3 rounded-lg border p-4">
              <legend className="px-1 text-sm font-semibold">Columns</legend>
              <p className="text-xs text-muted-foreground">
                Which column of the file fills each attribute. Columns named like an attribute or a custom field key are chosen for you.
              </p>
              <div className="grid gap-3 sm:grid-cols-2 lg:grid-cols-3">
                {attributes.map((a) => (
                  <FormField key={a.key} label={a.label}>
                    <SelectField
                      value={mapping[a.key] ?? SKIP}
                      onValueChange={(v) => {
                        setMappingTouched(true)
                        setMapping((m) => {
                          const next = { ...m }
                          if (v === SKIP) delete next[a.key]
                          else next[a.key] = v
                          return next
                        })
                      }}
                    >
                      <SelectItem value={SKIP}>Not imported</SelectItem>
                      {columns.map((c) => (
                        <SelectItem key={c} value={c}>
                          {c}
                        </SelectItem>
                      ))}
                    </SelectField>
                  </FormField>
                ))}
              </div>
              {fieldError(upload.error, 'mapping') ? (
                <p role="alert" className="text-sm text-destructive">
                  {fieldError(upload.error, 'mapping')}
                </p>
              ) : null}
            </fieldset>
          ) : null}
          <div>
            <Button type="submit" disabled={!file || !listId || upload.isPending}>
              <FileUpIcon /> {upload.isPending ? 'Uploading…' : 'Start import'}
            </Button>
          </div>
        </form>
      </CardContent>
    </Card>
  )
}

function Figure({ label, value, tone }: { label: string; value: number; tone?: 'danger' | 'success' }) {
  return (
    <div className="grid gap-1 rounded-lg border bg-card px-4 py-3">
      <span className="text-xs font-medium text-muted-foreground">{label}</span>
      <span
        className={cn(
          'text-2xl font-semibold tabular-nums',
          tone === 'danger' && value > 0 && 'text-destructive',
          tone === 'success' && value > 0 && 'text-success',
        )}
      >
        {formatNumber(value)}
      </span>
    </div>
  )
}

/** One import: a progress bar that follows it (polling) until it ends, the counts and the failed rows. */
function ImportDetail({ id }: { id: number }) {
  const listName = useListName()
  const qc = useQueryClient()
  const q = useQuery({
    queryKey: ['import', id],
    queryFn: () => api<Import>('GET', `/api/v2/imports/${id}`),
    refetchInterval: (query) => (query.state.data && !ACTIVE.has(query.state.data.status) ? false : POLL_MS),
    staleTime: 0,
  })
  const done = q.data ? !ACTIVE.has(q.data.status) : false
  const errors = useQuery({
    queryKey: ['import-errors', id],
    queryFn: () => apiPage<ImportError>(`/api/v2/imports/${id}/errors`, { per_page: 10 }),
    enabled: done && (q.data?.invalid ?? 0) > 0,
  })
  // When an import this page followed ends, the list of imports and the lists' counts are stale.
  const followed = useRef(false)
  useEffect(() => {
    if (!q.data) return
    if (ACTIVE.has(q.data.status)) followed.current = true
    else if (followed.current) {
      followed.current = false
      void qc.invalidateQueries({ queryKey: ['imports'] })
      void qc.invalidateQueries({ queryKey: ['lists'] })
    }
  }, [q.data, qc])

  if (q.isPending) return <LoadingState rows={4} label="Loading the import" />
  if (q.isError) return <ErrorState error={q.error} onRetry={() => q.refetch()} />
  const imp = q.data
  const total = imp.total_rows
  const pct = imp.status === 'completed' ? 100 : total ? Math.min(99, Math.floor((imp.rows_done / total) * 100)) : imp.status === 'queued' ? 0 : null
  return (
    <div className="grid gap-6">
      <Card>
        <CardHeader>
          <div className="flex flex-wrap items-center gap-3">
            <CardTitle>
              Import #{imp.id} into {listName(imp.list_id)}
            </CardTitle>
            <ImportStatus status={imp.status} />
          </div>
          <CardDescription>
            {imp.format.toUpperCase()}, {formatBytes(imp.file_bytes)}, existing addresses {imp.mode === 'skip' ? 'skipped' : 'updated'}
            {imp.enroll ? '' : ', drips not started'} · uploaded {formatDateTime(imp.created_at)}
            {imp.finished_at ? ` · finished ${formatDateTime(imp.finished_at)}` : ''}
          </CardDescription>
        </CardHeader>
        <CardContent className="grid gap-6">
          <div className="grid gap-2">
            <div className="flex items-center justify-between gap-4 text-sm">
              <span className="flex items-center gap-2 font-medium" id={`import-${imp.id}-label`}>
                {imp.status === 'completed' ? (
                  <CheckCircle2Icon className="size-4 text-success" aria-hidden="true" />
                ) : imp.status === 'failed' ? (
                  <XCircleIcon className="size-4 text-destructive" aria-hidden="true" />
                ) : (
                  <LoaderIcon className="size-4 animate-spin text-muted-foreground" aria-hidden="true" />
                )}
                {imp.status === 'queued'
                  ? 'Waiting to start'
                  : imp.status === 'running'
                    ? 'Importing'
                    : imp.status === 'completed'
                      ? 'Import finished'
                      : 'Import stopped'}
              </span>
              <span className="text-muted-foreground tabular-nums" aria-live="polite">
                {formatNumber(imp.rows_done)}
                {total !== null ? ` of ${imp.status === 'completed' ? '' : '~'}${formatNumber(total)}` : ''} rows{pct !== null ? ` · ${pct}%` : ''}
              </span>
            </div>
            <Progress value={pct} aria-labelledby={`import-${imp.id}-label`} />
            {imp.error ? (
              <p role="alert" className="text-sm text-destructive">
                {imp.error}
              </p>
            ) : null}
          </div>
          <div className="grid grid-cols-2 gap-3 md:grid-cols-4">
            <Figure label="Added" value={imp.created} tone="success" />
            <Figure label="Updated" value={imp.updated} />
            <Figure label="Skipped" value={imp.skipped} />
            <Figure label="Failed" value={imp.invalid} tone="danger" />
          </div>
          {imp.invalid > 0 ? (
            <div className="flex flex-wrap items-center gap-3">
              <Button asChild variant="outline" disabled={!done}>
                <a href={`/api/v2/imports/${imp.id}/errors/export`} download={`import-${imp.id}-errors.csv`}>
                  <DownloadIcon /> Download the {formatNumber(imp.invalid)} failed rows
                </a>
              </Button>
              <span className="text-xs text-muted-foreground">CSV with the row number, the reason and the row as read.</span>
            </div>
          ) : null}
        </CardContent>
      </Card>
      {errors.data && errors.data.data.length ? (
        <Card className="gap-0 overflow-hidden py-0">
          <CardHeader className="py-4">
            <CardTitle className="text-base">Failed rows</CardTitle>
            <CardDescription>
              The first {errors.data.data.length} of {formatNumber(errors.data.meta.total)}.
            </CardDescription>
          </CardHeader>
          <Table>
            <TableHeader>
              <TableRow className="hover:bg-transparent">
                <TableHead className="w-20">Row</TableHead>
                <TableHead>Reason</TableHead>
                <TableHead className="hidden md:table-cell">As read</TableHead>
              </TableRow>
            </TableHeader>
            <TableBody>
              {errors.data.data.map((e) => (
                <TableRow key={e.row}>
                  <TableCell className="tabular-nums">{e.row}</TableCell>
                  <TableCell>{e.reason}</TableCell>
                  <TableCell className="hidden max-w-md truncate font-mono text-xs md:table-cell">{e.raw}</TableCell>
                </TableRow>
              ))}
            </TableBody>
          </Table>
        </Card>
      ) : null}
    </div>
  )
}

function PastImports() {
  const listName = useListName()
  const [, navigate] = useLocation()
  const columns: Column<Import>[] = [
    {
      id: 'id',
      header: 'Import',
      cell: (i) => (
        <Link href={`/${i.id}`} className="font-medium hover:underline">
          #{i.id}
        </Link>
      ),
    },
    { id: 'list', header: 'List', cell: (i) => listName(i.list_id) },
    { id: 'status', header: 'Status', cell: (i) => <ImportStatus status={i.status} /> },
    {
      id: 'rows',
      header: 'Rows',
      className: 'text-right tabular-nums',
      cell: (i) => formatNumber(i.status === 'completed' ? (i.total_rows ?? i.rows_done) : i.rows_done),
    },
    { id: 'added', header: 'Added', className: 'hidden text-right tabular-nums sm:table-cell', cell: (i) => formatNumber(i.created) },
    { id: 'updated', header: 'Updated', className: 'hidden text-right tabular-nums md:table-cell', cell: (i) => formatNumber(i.updated) },
    { id: 'skipped', header: 'Skipped', className: 'hidden text-right tabular-nums md:table-cell', cell: (i) => formatNumber(i.skipped) },
    {
      id: 'failed',
      header: 'Failed',
      className: 'hidden text-right tabular-nums sm:table-cell',
      cell: (i) => <span className={i.invalid ? 'text-destructive' : 'text-muted-foreground'}>{formatNumber(i.invalid)}</span>,
    },
    { id: 'when', header: 'Uploaded', className: 'hidden lg:table-cell text-muted-foreground', cell: (i) => formatDateTime(i.created_at) },
  ]
  return (
    <section className="grid gap-3" aria-labelledby="past-imports">
      <h2 id="past-imports" className="text-lg font-semibold">
        Past imports
      </h2>
      <DataTable
        path="/api/v2/imports"
        queryKey="imports"
        columns={columns}
        rowKey={(i) => i.id}
        filters={['list_id']}
        caption="Past imports"
        onRowClick={(i) => navigate(`/${i.id}`)}
        empty={{ icon: UploadIcon, title: 'No imports yet', description: 'Imports you start appear here with their counts.' }}
      />
    </section>
  )
}

function DetailRoute() {
  const { id } = useParams<{ id: string }>()
  return (
    <div className="grid gap-6">
      <PageHeader
        title={`Import #${id}`}
        description="Progress updates by itself until the import ends."
        actions={
          <Button asChild variant="outline">
            <Link href="/">
              <ArrowLeftIcon /> All imports
            </Link>
          </Button>
        }
      />
      <ImportDetail id={Number(id)} />
    </div>
  )
}

/** Audience › Imports: upload a file into a list, follow it, and the imports before it. */
export function ImportsPage() {
  return (
    <Switch>
      <Route path="/:id">
        <DetailRoute />
      </Route>
      <Route>
        <div className="grid gap-6">
          <PageHeader title="Imports" description="Bring contacts in from CSV files, a million rows at a time if need be." />
          <UploadCard />
          <PastImports />
        </div>
      </Route>
    </Switch>
  )
}
