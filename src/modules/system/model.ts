import { t } from 'elysia'

export const HealthSchema = t.Object({ status: t.Literal('ok'), version: t.String() })
export const ReadySchema = t.Object({ status: t.Literal('ready') })
