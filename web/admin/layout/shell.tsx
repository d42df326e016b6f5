import { ChevronsUpDownIcon, LogOutIcon, MenuIcon } from 'lucide-react'
import { useState, type ReactNode } from 'react'
import { toast } from 'sonner'
import { useLocation } from 'wouter'
import { Button } from '../components/ui/button'
import {
  DropdownMenu,
  DropdownMenuContent,
  DropdownMenuItem,
  DropdownMenuLabel,
  DropdownMenuSeparator,
  DropdownMenuTrigger,
} from '../components/ui/dropdown-menu'
import { Sheet, SheetContent, SheetDescription, SheetTitle } from '../components/ui/sheet'
import { api, errorMessage } from '../lib/api'
import { useSetSession, type Admin } from '../lib/session'
import { Brand, Nav } from './nav'
import { ThemeMenu } from './theme-menu'

function initials(email: string): string {
  return email.slice(0, 2).toUpperCase()
}

/** The signed-in person and the way out. */
function UserMenu({ admin }: { admin: Admin }) {
  const setSession = useSetSession()
  const [, navigate] = useLocation()
  const signOut = async () => {
    try {
      await api('DELETE', '/admin/api/session')
    } catch (e) {
      toast.error(`Sign-out failed: ${errorMessage(e)}`)
      return
    }
    setSession(null)
    navigate('/sign-in', { replace: true })
  }
  return (
    <DropdownMenu>
      <DropdownMenuTrigger asChild>
        <Button variant="ghost" className="h-9 gap-2 px-2">
          {/* Named by its text (no aria-label), so the spoken name holds what is seen (WCAG 2.5.3). */}
          <span className="sr-only">Account: </span>
          <span className="sr-only sm:hidden">{admin.email}</span>
          <span className="flex size-7 items-center justify-center rounded-full bg-primary/12 text-xs font-semibold text-primary" aria-hidden="true">
            {initials(admin.email)}
          </span>
          <span className="hidden max-w-48 truncate text-left sm:grid">
            <span className="truncate text-sm leading-tight font-medium">{admin.email}</span>
            <span className="truncate text-xs leading-tight text-muted-foreground">{admin.role.name}</span>
          </span>
          <ChevronsUpDownIcon className="hidden size-3.5 text-muted-foreground sm:block" aria-hidden="true" />
        </Button>
      </DropdownMenuTrigger>
      <DropdownMenuContent align="end" className="w-60">
        <DropdownMenuLabel className="grid gap-0.5">
          <span className="truncate">{admin.email}</span>
          <span className="text-xs font-normal text-muted-foreground">Role: {admin.role.name}</span>
        </DropdownMenuLabel>
        <DropdownMenuSeparator />
        <DropdownMenuItem onSelect={signOut}>
          <LogOutIcon /> Sign out
        </DropdownMenuItem>
      </DropdownMenuContent>
    </DropdownMenu>
  )
}

/** The signed-in frame: sidebar (a sheet under 768 px), top bar, and the page. */
export function Shell({ admin, children }: { admin: Admin; children: ReactNode }) {
  const [menuOpen, setMenuOpen] = useState(false)
  return (
    <div className="min-h-dvh md:grid md:grid-cols-[16rem_1fr]">
      <a href="#main" className="sr-only z-50 rounded-md bg-card px-3 py-2 focus:not-sr-only focus:fixed focus:top-2 focus:left-2">
        Skip to content
      </a>
      {/* The column paints the sidebar's colour all the way down; the sidebar itself stays in view. */}
      <div className="hidden border-r border-sidebar-border bg-sidebar md:block">
        <aside className="sticky top-0 flex h-dvh flex-col gap-5 pt-5">
          <Brand />
          <Nav admin={admin} />
        </aside>
      </div>
      <Sheet open={menuOpen} onOpenChange={setMenuOpen}>
        <SheetContent side="left" className="pt-5">
          <SheetTitle className="sr-only">Navigation</SheetTitle>
          <SheetDescription className="sr-only">The console's pages</SheetDescription>
          <Brand />
          <Nav admin={admin} onNavigate={() => setMenuOpen(false)} />
        </SheetContent>
      </Sheet>
      <div className="flex min-w-0 flex-col">
        <header className="sticky top-0 z-30 flex h-14 items-center gap-2 border-b bg-background/85 px-4 backdrop-blur supports-[backdrop-filter]:bg-background/70 md:px-8">
          <Button variant="ghost" size="icon" className="-ml-2 md:hidden" aria-label="Open navigation" onClick={() => setMenuOpen(true)}>
            <MenuIcon />
          </Button>
          <span className="font-semibold md:hidden">Mailroom</span>
          <div className="ml-auto flex items-center gap-1">
            <ThemeMenu />
            <UserMenu admin={admin} />
          </div>
        </header>
        <main id="main" className="mx-auto w-full max-w-7xl flex-1 px-4 py-6 md:px-8 md:py-8">
          {children}
        </main>
      </div>
    </div>
  )
}
