/**
 * The permission tree (spec "API role"). Every action is its own permission id
 * `<group>.<action>`, granted or denied on its own. Groups are the spec's list plus the
 * ones later features need. Adding a permission is safe; renaming one breaks stored roles.
 */
const ACTION_WORDS: Record<string, string> = {
  read: 'View',
  create: 'Create',
  update: 'Change',
  delete: 'Delete',
  restore: 'Restore deleted',
  import: 'Import',
  send: 'Send',
  verify: 'Verify',
  test: 'Test',
  track: 'Record custom events for',
}

const GROUPS: Array<{ id: string; name: string; noun: string; actions: string[] }> = [
  { id: 'contacts', name: 'Contacts', noun: 'contacts', actions: ['read', 'create', 'update', 'delete', 'import'] },
  { id: 'lists', name: 'Lists', noun: 'lists', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'broadcasts', name: 'Broadcasts', noun: 'broadcasts', actions: ['read', 'create', 'update', 'delete', 'send'] },
  { id: 'segments', name: 'Segments', noun: 'segments', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'custom_fields', name: 'Custom Fields', noun: 'custom fields', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'sending_nodes', name: 'Sending Nodes', noun: 'sending nodes', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'sending_domains', name: 'Sending Domains', noun: 'sending domains', actions: ['read', 'create', 'update', 'delete', 'verify'] },
  { id: 'drips', name: 'Drips', noun: 'drips', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'triggers', name: 'Triggers', noun: 'triggers', actions: ['read', 'create', 'update', 'delete', 'track'] },
  { id: 'suppressions', name: 'Suppression', noun: 'suppressions', actions: ['read', 'create', 'delete'] },
  { id: 'statistics', name: 'Statistics', noun: 'statistics and events', actions: ['read'] },
  { id: 'webhooks', name: 'Webhooks', noun: 'webhooks', actions: ['read', 'create', 'update', 'delete', 'test'] },
  { id: 'templates', name: 'Templates', noun: 'templates', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'transactional', name: 'Transactional', noun: 'transactional messages', actions: ['read', 'send'] },
  { id: 'bridges', name: 'Bridges', noun: 'bridges', actions: ['read', 'create', 'update', 'delete', 'test'] },
  { id: 'ips', name: 'IPs and Pools', noun: 'IPs and IP pools', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'web_forms', name: 'Web Forms', noun: 'web forms', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'feedback_loops', name: 'Feedback Loops', noun: 'feedback-loop accounts', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'spin_tags', name: 'Spin Tags', noun: 'spin tags', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'activity_logs', name: 'Activity Logs', noun: 'activity logs', actions: ['read'] },
  { id: 'api_keys', name: 'API Keys', noun: 'API keys', actions: ['read', 'create', 'update', 'delete', 'restore'] },
  { id: 'roles', name: 'Roles', noun: 'roles', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'admins', name: 'Administrators', noun: 'console administrators', actions: ['read', 'create', 'update', 'delete'] },
  { id: 'settings', name: 'Settings', noun: 'server settings', actions: ['read'] },
  { id: 'doctor', name: 'Deliverability', noun: 'and run the deliverability checks', actions: ['read'] },
]

export interface PermissionNode {
  id: string
  action: string
  description: string
}

export interface PermissionGroup {
  id: string
  name: string
  permissions: PermissionNode[]
}

/** The whole tree, as GET /api/v2/permissions returns it. */
export const PERMISSION_TREE: PermissionGroup[] = GROUPS.map((g) => ({
  id: g.id,
  name: g.name,
  permissions: g.actions.map((action) => ({ id: `${g.id}.${action}`, action, description: `${ACTION_WORDS[action]} ${g.noun}` })),
}))

/** Every permission id. */
export const ALL_PERMISSIONS: readonly string[] = PERMISSION_TREE.flatMap((g) => g.permissions.map((p) => p.id))
const KNOWN = new Set(ALL_PERMISSIONS)

/** The grant that means every permission, including ones added in later versions. */
export const ALL = '*'

/** True when the id names a permission. */
export function isPermission(id: string): boolean {
  return KNOWN.has(id)
}

/** True when a role's grants include the permission. */
export function grants(granted: readonly string[], permission: string): boolean {
  return granted.includes(ALL) || granted.includes(permission)
}

/** True when every permission of `wanted` is also granted by `held` (no privilege escalation). */
export function isSubset(wanted: readonly string[], held: readonly string[]): boolean {
  if (held.includes(ALL)) return true
  if (wanted.includes(ALL)) return false
  return wanted.every((p) => held.includes(p))
}
