import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { CompassIcon, HammerIcon, LockIcon } from 'lucide-react'
import { useEffect } from 'react'
import { Toaster } from 'sonner'
import { Link, Redirect, Route, Router, Switch, useLocation } from 'wouter'
import { PageHeader } from './components/page-header'
import { EmptyState, ErrorState, LoadingState } from './components/states'
import { Button } from './components/ui/button'
import { TooltipProvider } from './components/ui/tooltip'
import { Shell } from './layout/shell'
import { ApiError } from './lib/api'
import { can, useSession, type Admin } from './lib/session'
import { ThemeProvider, useTheme } from './lib/theme'
import { SetupPage } from './pages/setup'
import { SignInPage } from './pages/sign-in'
import { GROUPS, PAGES, type PageDef } from './routes'

/** One client for the whole console: reads stay fresh for 15 s; a 4xx is not retried. */
export function makeQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 15_000,
        refetchOnWindowFocus: false,
        retry: (count, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && count < 2,
      },
    },
  })
}

/** The route of a page still to be built: says so, and nothing else. */
function Coming({ page }: { page: PageDef }) {
  return (
    <div className="grid gap-8">
      <PageHeader title={page.label} description={page.description} />
      <EmptyState
        icon={HammerIcon}
        title="Coming soon"
        description={`The ${page.label} page is not in this version of the console yet. Everything it will do is already in the REST API (see /docs).`}
      />
    </div>
  )
}

function Forbidden({ page }: { page: PageDef }) {
  return (
    <div className="grid gap-8">
      <PageHeader title={page.label} />
      <EmptyState
        icon={LockIcon}
        title="Your role does not include this page"
        description={`Viewing ${page.label.toLowerCase()} needs the ${page.permission} permission. Ask an administrator to change your role.`}
      />
    </div>
  )
}

function NotFound() {
  return (
    <EmptyState
      icon={CompassIcon}
      title="There is no such page"
      description="The address may be mistyped, or the page may have moved."
      action={
        <Button asChild variant="outline">
          <Link href="/">Go to the dashboard</Link>
        </Button>
      }
    />
  )
}

function Pages({ admin }: { admin: Admin }) {
  return (
    <Switch>
      {PAGES.map((p) => {
        const Page = p.component
        return (
          <Route key={p.path} path={p.path} nest={p.path !== '/'}>
            {!can(admin, p.permission) ? <Forbidden page={p} /> : Page ? <Page /> : <Coming page={p} />}
          </Route>
        )
      })}
      {GROUPS.map((g) => {
        // A group's own path (/admin/sending, linked from warnings) opens its first page the role may see.
        const first = g.items.find((p) => can(admin, p.permission)) ?? g.items[0]!
        return (
          <Route key={g.path} path={g.path}>
            <Redirect to={first.path} replace />
          </Route>
        )
      })}
      <Route>
        <NotFound />
      </Route>
    </Switch>
  )
}

/** Everything behind sign-in: without a session, off to /admin/sign-in?next=<here>. */
function SignedIn() {
  const session = useSession()
  const [location, navigate] = useLocation()
  const signedOut = session.isSuccess && session.data === null
  useEffect(() => {
    if (!signedOut) return
    const here = `/admin${location === '/' ? '' : location}${window.location.search}`
    navigate(`/sign-in?next=${encodeURIComponent(here)}`, { replace: true })
  }, [signedOut, location, navigate])
  if (session.isPending || signedOut) return <LoadingState rows={3} className="mx-auto mt-24 max-w-md px-4" label="Checking your session" />
  if (session.isError)
    return <ErrorState className="mx-auto mt-24 max-w-md" title="The console could not start" error={session.error} onRetry={() => session.refetch()} />
  return (
    <Shell admin={session.data!.admin}>
      <Pages admin={session.data!.admin} />
    </Shell>
  )
}

function Toasts() {
  const { resolved } = useTheme()
  return <Toaster theme={resolved} position="bottom-right" richColors closeButton />
}

/** The console: providers, then the signed-out pages or the signed-in shell. */
export function App({ client = makeQueryClient() }: { client?: QueryClient }) {
  return (
    <QueryClientProvider client={client}>
      <ThemeProvider>
        <TooltipProvider delayDuration={300}>
          <Router base="/admin">
            <Switch>
              <Route path="/sign-in" component={SignInPage} />
              <Route path="/setup" component={SetupPage} />
              <Route>
                <SignedIn />
              </Route>
            </Switch>
          </Router>
          <Toasts />
        </TooltipProvider>
      </ThemeProvider>
    </QueryClientProvider>
  )
}
