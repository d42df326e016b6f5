import { useMutation, useQuery } from '@tanstack/react-query'
import { InfoIcon, LoaderCircleIcon } from 'lucide-react'
import { useEffect, useState, type FormEvent } from 'react'
import { useLocation, useSearch } from 'wouter'
import { FormField } from '../components/ui/form-field'
import { Button } from '../components/ui/button'
import { Input } from '../components/ui/input'
import { ApiError, api, errorMessage, fieldError } from '../lib/api'
import { useSession, useSetSession, type SessionAnswer } from '../lib/session'
import { AuthLayout, FormAlert } from './auth-layout'

/** Where to go after signing in: the `next` the 401 redirect gave, if it is a console path. */
export function nextPath(search: string): string {
  const next = new URLSearchParams(search).get('next')
  if (!next || !next.startsWith('/admin') || next.startsWith('//') || next.startsWith('/admin/sign-in')) return '~/admin'
  return `~${next}`
}

/** The sign-in page: email and password; a wrong pair says so in one message. */
export function SignInPage() {
  const search = useSearch()
  const [, navigate] = useLocation()
  const session = useSession()
  const setSession = useSetSession()
  const setup = useQuery({ queryKey: ['admin-setup'], queryFn: () => api<{ needed: boolean }>('GET', '/admin/api/setup'), retry: false })
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [missing, setMissing] = useState<{ email?: string; password?: string }>({})

  useEffect(() => {
    if (session.data) navigate(nextPath(search), { replace: true })
  }, [session.data, navigate, search])

  const signIn = useMutation({
    mutationFn: () => api<SessionAnswer>('POST', '/admin/api/session', { email, password }),
    onSuccess: (s) => {
      setSession(s)
      navigate(nextPath(search), { replace: true })
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const empty = { email: email.trim() ? undefined : 'Enter your email.', password: password ? undefined : 'Enter your password.' }
    setMissing(empty)
    if (!empty.email && !empty.password) signIn.mutate()
  }
  const err = signIn.error
  // A wrong pair and a throttled address are answers about the whole form, not one field.
  const formError = err && !(err instanceof ApiError && err.details && (fieldError(err, 'email') || fieldError(err, 'password'))) ? errorMessage(err) : null

  return (
    <AuthLayout title="Sign in to Mailroom" description="Use your administrator email and password.">
      {setup.data?.needed ? (
        <div className="mb-5 flex gap-3 rounded-lg border border-primary/25 bg-primary/5 p-3 text-sm">
          <InfoIcon className="mt-0.5 size-4 shrink-0 text-primary" aria-hidden="true" />
          <p>
            No administrator exists yet. Open the one-time setup link the server printed when it started, or run{' '}
            <code className="rounded bg-muted px-1 py-0.5 text-xs">mailroom admin create --email you@example.com</code>.
          </p>
        </div>
      ) : null}
      <form onSubmit={submit} className="grid gap-4" noValidate>
        {formError ? <FormAlert>{formError}</FormAlert> : null}
        <FormField label="Email" error={missing.email ?? fieldError(err, 'email')}>
          <Input type="email" name="email" autoComplete="username" required autoFocus value={email} onChange={(e) => setEmail(e.target.value)} />
        </FormField>
        <FormField label="Password" error={missing.password ?? fieldError(err, 'password')}>
          <Input type="password" name="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        </FormField>
        <Button type="submit" className="mt-2 w-full" disabled={signIn.isPending}>
          {signIn.isPending ? <LoaderCircleIcon className="animate-spin" aria-hidden="true" /> : null}
          Sign in
        </Button>
      </form>
      <p className="mt-6 text-center text-xs text-muted-foreground">
        Forgot your password? On the server, run <code className="rounded bg-muted px-1 py-0.5">mailroom admin reset-password --email …</code>
      </p>
    </AuthLayout>
  )
}
