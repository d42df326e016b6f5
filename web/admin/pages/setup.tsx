import { useMutation, useQuery } from '@tanstack/react-query'
import { CheckCircle2Icon, LoaderCircleIcon } from 'lucide-react'
import { useState, type FormEvent } from 'react'
import { Link, useLocation } from 'wouter'
import { LoadingState } from '../components/states'
import { Button } from '../components/ui/button'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { ApiError, api, errorMessage, fieldError } from '../lib/api'
import { useSetSession, type SessionAnswer } from '../lib/session'
import { AuthLayout, FormAlert } from './auth-layout'

/** Passwords are at least this long (the server checks too; CONSOLE.md "Passwords"). */
const MIN_PASSWORD = 10

/** The one-time token from the setup link's fragment (#token=...), which never reaches a server log. */
function tokenFromHash(): string {
  return new URLSearchParams(window.location.hash.slice(1)).get('token') ?? ''
}

/** First-run setup: the link printed at start creates the first administrator and signs them in. */
export function SetupPage() {
  const [, navigate] = useLocation()
  const setSession = useSetSession()
  const [token] = useState(tokenFromHash)
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [confirm, setConfirm] = useState('')
  const [local, setLocal] = useState<{ email?: string; password?: string; confirm?: string }>({})
  const status = useQuery({ queryKey: ['admin-setup'], queryFn: () => api<{ needed: boolean }>('GET', '/admin/api/setup'), retry: false })
  const create = useMutation({
    mutationFn: () => api<SessionAnswer>('POST', '/admin/api/setup', { token, email, password }),
    onSuccess: (s) => {
      setSession(s)
      navigate('/', { replace: true })
    },
  })

  const submit = (e: FormEvent) => {
    e.preventDefault()
    const problems: typeof local = {}
    if (!email.trim()) problems.email = 'Enter your email.'
    if (password.length < MIN_PASSWORD) problems.password = `Use at least ${MIN_PASSWORD} characters.`
    if (confirm !== password) problems.confirm = 'The two passwords differ.'
    setLocal(problems)
    if (!problems.email && !problems.password && !problems.confirm) create.mutate()
  }

  if (status.isPending) {
    return (
      <AuthLayout title="Set up Mailroom" description="Checking this server…">
        <LoadingState rows={3} />
      </AuthLayout>
    )
  }
  if (status.data && !status.data.needed) {
    return (
      <AuthLayout title="Mailroom is set up" description="An administrator already exists, so this link no longer works.">
        <div className="grid justify-items-center gap-4">
          <CheckCircle2Icon className="size-8 text-success" aria-hidden="true" />
          <Button asChild className="w-full">
            <Link href="/sign-in">Go to sign-in</Link>
          </Button>
        </div>
      </AuthLayout>
    )
  }
  if (!token) {
    return (
      <AuthLayout title="Set up Mailroom" description="This page needs the one-time link the server printed when it started.">
        <p className="text-sm text-muted-foreground">
          Copy the whole link (it ends in <code className="rounded bg-muted px-1">#token=…</code>) from the server's output, or create the first administrator
          on the server with <code className="rounded bg-muted px-1">mailroom admin create --email you@example.com</code>.
        </p>
      </AuthLayout>
    )
  }

  const err = create.error
  const tokenProblem =
    err instanceof ApiError && (fieldError(err, 'token') || (!err.details && err.status !== 422)) ? (fieldError(err, 'token') ?? errorMessage(err)) : null
  return (
    <AuthLayout title="Create the first administrator" description="This account can do everything; add more people with their own roles later.">
      <form onSubmit={submit} className="grid gap-4" noValidate>
        {tokenProblem ? <FormAlert>{tokenProblem}</FormAlert> : null}
        <FormField label="Email" error={local.email ?? fieldError(err, 'email')}>
          <Input type="email" autoComplete="username" required autoFocus value={email} onChange={(e) => setEmail(e.target.value)} />
        </FormField>
        <FormField label="Password" hint={`At least ${MIN_PASSWORD} characters.`} error={local.password ?? fieldError(err, 'password')}>
          <Input type="password" autoComplete="new-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        </FormField>
        <FormField label="Confirm password" error={local.confirm}>
          <Input type="password" autoComplete="new-password" required value={confirm} onChange={(e) => setConfirm(e.target.value)} />
        </FormField>
        <Button type="submit" className="mt-2 w-full" disabled={create.isPending}>
          {create.isPending ? <LoaderCircleIcon className="animate-spin" aria-hidden="true" /> : null}
          Create administrator
        </Button>
      </form>
    </AuthLayout>
  )
}
