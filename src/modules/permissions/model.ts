import { t } from 'elysia'

export const PermissionTreeSchema = t.Array(
  t.Object({
    id: t.String(),
    name: t.String(),
    permissions: t.Array(t.Object({ id: t.String(), action: t.String(), description: t.String() })),
  }),
)
