import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import type { ImportRunner } from '../imports/runner'
import { apiKeyRoutes } from './api-keys'
import { automationRoutes } from './automations'
import { broadcastRecipientRoutes } from './broadcast-recipients'
import { broadcastRoutes } from './broadcasts'
import { contactImportRoutes } from './contact-imports'
import { contactPropertyRoutes } from './contact-properties'
import { contactRoutes } from './contacts'
import { domainRoutes } from './domains'
import { eventRoutes } from './events'
import { segmentRoutes } from './segments'
import { suppressionRoutes } from './suppressions'
import { templateRoutes } from './templates'
import { webhookRoutes } from './webhooks'

/**
 * The Resend SDK's method groups beyond emails (issue 19), each mapped onto the native
 * services: one file per group. Mounted by the compat plugin (src/modules/messages/resend.ts)
 * inside its prefixed instance (which prefixes these routes), so the error dialect and
 * authentication are the same as for emails.
 */
export function resendSdkRoutes(deps: Deps, authOf: AuthOf, imports?: ImportRunner) {
  return (
    new Elysia()
      .use(domainRoutes(deps))
      .use(apiKeyRoutes(deps, authOf))
      .use(webhookRoutes(deps))
      .use(segmentRoutes(deps))
      // before the contacts' /contacts/:id routes, so /contacts/imports is not read as a contact
      .use(contactImportRoutes(deps, authOf, imports))
      .use(contactRoutes(deps, authOf))
      .use(contactPropertyRoutes(deps))
      .use(suppressionRoutes(deps))
      .use(templateRoutes(deps))
      .use(broadcastRoutes(deps, authOf))
      .use(broadcastRecipientRoutes(deps))
      .use(automationRoutes(deps))
      .use(eventRoutes(deps, authOf))
  )
}
