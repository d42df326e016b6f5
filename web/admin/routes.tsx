/**
 * The console's page registry: every page with its path (under /admin), its sidebar entry
 * (icon, label, group) and the permission that shows it. A page without a component is
 * listed as coming: its route says so and does nothing else. To add a page, write
 * pages/<name>.tsx and set `component` on its entry here.
 */
import {
  BanIcon,
  BracesIcon,
  CableIcon,
  ContactIcon,
  FileTextIcon,
  GaugeIcon,
  FilterIcon,
  GlobeIcon,
  HistoryIcon,
  KeyRoundIcon,
  LayoutDashboardIcon,
  ListIcon,
  MailIcon,
  MegaphoneIcon,
  NetworkIcon,
  SendIcon,
  ServerIcon,
  SettingsIcon,
  StethoscopeIcon,
  TextCursorInputIcon,
  ShieldCheckIcon,
  ShieldIcon,
  UploadIcon,
  UsersIcon,
  WebhookIcon,
  type LucideIcon,
} from 'lucide-react'
import type { ComponentType } from 'react'
import { ContactsPage } from './pages/audience/contacts'
import { CustomFieldsPage } from './pages/audience/custom-fields'
import { ImportsPage } from './pages/audience/imports'
import { ListsPage } from './pages/audience/lists'
import { SegmentsPage } from './pages/audience/segments'
import { SuppressionsPage } from './pages/audience/suppressions'
import { ActivityPage } from './pages/activity'
import { ApiKeysPage } from './pages/api-keys'
import { BroadcastsPage } from './pages/broadcasts'
import { DashboardPage } from './pages/dashboard'
import { DeliverabilityPage } from './pages/deliverability'
import { MessagesPage } from './pages/messages'
import { RolesPage } from './pages/roles'
import { SettingsPage } from './pages/settings'
import { SendingBridgesPage } from './pages/sending-bridges'
import { SendingDomainsPage } from './pages/sending-domains'
import { SendingIpsPage } from './pages/sending-ips'
import { SendingNodesPage } from './pages/sending-nodes'
import { SendingQueuePage } from './pages/sending-queue'
import { TemplatesPage } from './pages/templates'
import { WebhooksPage } from './pages/webhooks'
import { WebFormsPage } from './pages/web-forms'

/** One page of the console. */
export interface PageDef {
  /** Path under /admin ("/" is the dashboard). */
  path: string
  label: string
  icon: LucideIcon
  /** The permission that shows it in the sidebar and lets it open; null for everyone signed in. */
  permission: string | null
  /** What the page is for, one line (the page header and the "coming" note use it). */
  description: string
  /** Unset while the page is still to be built. */
  component?: ComponentType
}

/** A labelled group of pages in the sidebar. */
export interface NavGroup {
  /** The group's own path: it opens the first page the role may see. */
  path: string
  label: string
  icon: LucideIcon
  items: PageDef[]
}

export type NavEntry = PageDef | NavGroup

/** True for a group entry. */
export function isGroup(e: NavEntry): e is NavGroup {
  return 'items' in e
}

/** The sidebar, in order. */
export const NAV: NavEntry[] = [
  {
    path: '/',
    label: 'Dashboard',
    icon: LayoutDashboardIcon,
    permission: null,
    description: 'Sending activity, the queue and what needs your attention.',
    component: DashboardPage,
  },
  {
    path: '/messages',
    label: 'Messages',
    icon: MailIcon,
    permission: 'transactional.read',
    description: 'Search sent messages and follow each one’s delivery timeline.',
    component: MessagesPage,
  },
  {
    path: '/audience',
    label: 'Audience',
    icon: UsersIcon,
    items: [
      {
        path: '/audience/lists',
        label: 'Lists',
        icon: ListIcon,
        permission: 'lists.read',
        description: 'Mailing lists and their subscribers.',
        component: ListsPage,
      },
      {
        path: '/audience/contacts',
        label: 'Contacts',
        icon: ContactIcon,
        permission: 'contacts.read',
        description: 'Everyone on your lists, with their fields and history.',
        component: ContactsPage,
      },
      {
        path: '/audience/imports',
        label: 'Imports',
        icon: UploadIcon,
        permission: 'contacts.import',
        description: 'Bring contacts in from CSV files.',
        component: ImportsPage,
      },
      {
        path: '/audience/segments',
        label: 'Segments',
        icon: FilterIcon,
        permission: 'segments.read',
        description: 'Audiences defined by rules, counted live.',
        component: SegmentsPage,
      },
      {
        path: '/audience/custom-fields',
        label: 'Custom fields',
        icon: BracesIcon,
        permission: 'custom_fields.read',
        description: 'Extra data kept on each contact.',
        component: CustomFieldsPage,
      },
      {
        path: '/audience/suppressions',
        label: 'Suppressions',
        icon: BanIcon,
        permission: 'suppressions.read',
        description: 'Addresses that must never be mailed.',
        component: SuppressionsPage,
      },
    ],
  },
  {
    path: '/broadcasts',
    label: 'Broadcasts',
    icon: MegaphoneIcon,
    permission: 'broadcasts.read',
    description: 'Mailings to lists and segments: schedule, progress and results.',
    component: BroadcastsPage,
  },
  {
    path: '/web-forms',
    label: 'Web forms',
    icon: TextCursorInputIcon,
    permission: 'web_forms.read',
    description: 'Sign-up forms, hosted or embedded, with double opt-in.',
    component: WebFormsPage,
  },
  {
    path: '/templates',
    label: 'Templates',
    icon: FileTextIcon,
    permission: 'templates.read',
    description: 'Message templates with versions and previews.',
    component: TemplatesPage,
  },
  {
    path: '/sending',
    label: 'Sending',
    icon: SendIcon,
    items: [
      {
        path: '/sending/domains',
        label: 'Domains',
        icon: GlobeIcon,
        permission: 'sending_domains.read',
        description: 'Sending domains and the DNS records that authenticate them.',
        component: SendingDomainsPage,
      },
      {
        path: '/sending/ips',
        label: 'IPs & pools',
        icon: NetworkIcon,
        permission: 'ips.read',
        description: 'Sending addresses and the pools that group them.',
        component: SendingIpsPage,
      },
      {
        path: '/sending/nodes',
        label: 'Nodes',
        icon: ServerIcon,
        permission: 'sending_nodes.read',
        description: 'The machines that deliver mail.',
        component: SendingNodesPage,
      },
      {
        path: '/sending/queue',
        label: 'Queue',
        icon: GaugeIcon,
        permission: 'ips.read',
        description: 'Mail waiting per provider and IP, throttles, suspensions and IP warm-up.',
        component: SendingQueuePage,
      },
      {
        path: '/sending/bridges',
        label: 'Bridges',
        icon: CableIcon,
        permission: 'bridges.read',
        description: 'SMTP credentials for applications that cannot call the API.',
        component: SendingBridgesPage,
      },
      {
        path: '/sending/deliverability',
        label: 'Deliverability',
        icon: StethoscopeIcon,
        permission: 'doctor.read',
        description: 'DNS, reverse DNS, blocklists and bulk-sender rules checked, each problem with its fix.',
        component: DeliverabilityPage,
      },
    ],
  },
  {
    path: '/webhooks',
    label: 'Webhooks',
    icon: WebhookIcon,
    permission: 'webhooks.read',
    description: 'Event deliveries to your endpoints.',
    component: WebhooksPage,
  },
  {
    path: '/access',
    label: 'Access',
    icon: ShieldIcon,
    items: [
      {
        path: '/access/api-keys',
        label: 'API keys',
        icon: KeyRoundIcon,
        permission: 'api_keys.read',
        description: 'Keys for the REST API, their limits and allowlists.',
        component: ApiKeysPage,
      },
      {
        path: '/access/roles',
        label: 'Roles',
        icon: ShieldCheckIcon,
        permission: 'roles.read',
        description: 'What each key and administrator may do.',
        component: RolesPage,
      },
      {
        path: '/access/activity',
        label: 'Activity log',
        icon: HistoryIcon,
        permission: 'activity_logs.read',
        description: 'Who changed what, and when.',
        component: ActivityPage,
      },
    ],
  },
  {
    path: '/settings',
    label: 'Settings',
    icon: SettingsIcon,
    permission: 'settings.read',
    description: 'Administrators, host names and defaults.',
    component: SettingsPage,
  },
]

/** The groups. */
export const GROUPS: NavGroup[] = NAV.filter(isGroup)

/** Every page, groups flattened. */
export const PAGES: PageDef[] = NAV.flatMap((e) => (isGroup(e) ? e.items : [e]))
