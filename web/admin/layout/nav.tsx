import { ChevronDownIcon, MailboxIcon } from 'lucide-react'
import { useState } from 'react'
import { Link, useLocation } from 'wouter'
import { can, type Admin } from '../lib/session'
import { cn } from '../lib/utils'
import { isGroup, NAV, type NavGroup, type PageDef } from '../routes'

/** True when the page is the one shown (the dashboard only at its exact path). */
function isActive(page: PageDef, location: string): boolean {
  return page.path === '/' ? location === '/' : location === page.path || location.startsWith(`${page.path}/`)
}

function NavLink({ page, location, onNavigate, nested }: { page: PageDef; location: string; onNavigate?: () => void; nested?: boolean }) {
  const active = isActive(page, location)
  const Icon = page.icon
  return (
    <li>
      <Link
        href={page.path}
        onClick={onNavigate}
        aria-current={active ? 'page' : undefined}
        className={cn(
          'flex h-8 items-center gap-2.5 rounded-md px-2.5 text-sm text-sidebar-foreground transition-colors outline-none hover:bg-sidebar-accent/70 hover:text-sidebar-accent-foreground focus-visible:ring-[3px] focus-visible:ring-ring/50',
          nested && 'pl-9',
          active && 'bg-sidebar-accent font-medium text-sidebar-accent-foreground',
        )}
      >
        {nested ? null : <Icon className="size-4 shrink-0 opacity-80" aria-hidden="true" />}
        <span className="truncate">{page.label}</span>
        {page.component ? null : (
          <span className="ml-auto rounded bg-muted px-1.5 py-px text-[10px] font-medium tracking-wide text-muted-foreground uppercase">Soon</span>
        )}
      </Link>
    </li>
  )
}

function Group({ group, location, onNavigate, admin }: { group: NavGroup; location: string; onNavigate?: () => void; admin: Admin | null }) {
  const items = group.items.filter((p) => can(admin, p.permission))
  const [open, setOpen] = useState(true)
  if (items.length === 0) return null
  const Icon = group.icon
  const id = `nav-group-${group.label.toLowerCase()}`
  return (
    <li>
      <button
        type="button"
        aria-expanded={open}
        aria-controls={id}
        onClick={() => setOpen(!open)}
        className="flex h-8 w-full items-center gap-2.5 rounded-md px-2.5 text-sm text-sidebar-foreground outline-none hover:bg-sidebar-accent/70 focus-visible:ring-[3px] focus-visible:ring-ring/50"
      >
        <Icon className="size-4 shrink-0 opacity-80" aria-hidden="true" />
        <span>{group.label}</span>
        <ChevronDownIcon className={cn('ml-auto size-3.5 opacity-60 transition-transform', !open && '-rotate-90')} aria-hidden="true" />
      </button>
      <ul id={id} hidden={!open} className="mt-0.5 grid gap-0.5">
        {items.map((p) => (
          <NavLink key={p.path} page={p} location={location} onNavigate={onNavigate} nested />
        ))}
      </ul>
    </li>
  )
}

/** The product name at the top of the sidebar. */
export function Brand() {
  return (
    <Link href="/" className="flex items-center gap-2 rounded-md px-2.5 outline-none focus-visible:ring-[3px] focus-visible:ring-ring/50">
      <span className="flex size-7 items-center justify-center rounded-lg bg-primary text-primary-foreground shadow-sm">
        <MailboxIcon className="size-4" aria-hidden="true" />
      </span>
      <span className="text-[15px] font-semibold tracking-tight">Mailroom</span>
    </Link>
  )
}

/** The grouped navigation (sidebar on wide screens, sheet on phones); only pages the role may open. */
export function Nav({ admin, onNavigate }: { admin: Admin | null; onNavigate?: () => void }) {
  const [location] = useLocation()
  return (
    <nav aria-label="Main" className="flex-1 overflow-y-auto px-3 pb-4">
      <ul className="grid gap-0.5">
        {NAV.map((e) =>
          isGroup(e) ? (
            <Group key={e.label} group={e} location={location} onNavigate={onNavigate} admin={admin} />
          ) : can(admin, e.permission) ? (
            <NavLink key={e.path} page={e} location={location} onNavigate={onNavigate} />
          ) : null,
        )}
      </ul>
    </nav>
  )
}
