import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { clientAddress, type AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ok, publicRoute, requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import { createRateLimiter } from '../../lib/rate-limit'
import { checkChallenge, CHALLENGE_FIELD, newChallenge } from './challenge'
import { ConfirmParams, CreateWebFormBody, PreviewBody, PreviewSchema, PublicIdParams, SubmissionBody, UpdateWebFormBody, WebFormSchema } from './model'
import { confirmButton, HONEYPOT_FIELD, hostedPage, page, para, problemList } from './pages'
import {
  confirmState,
  confirmSubmission,
  createWebForm,
  deleteWebForms,
  findPublicForm,
  formDefinitions,
  getWebForm,
  listWebForms,
  previewPage,
  submitForm,
  updateWebForm,
  type ClientInfo,
} from './service'
import { SOLVER_JS } from './solver'

/** /api/v2/web-forms */
export function webFormRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'web_forms',
    view: WebFormSchema,
    create: { summary: 'Create a web form', body: CreateWebFormBody, handle: (body) => createWebForm(deps, body) },
    list: { summary: 'List web forms', handle: (query) => listWebForms(deps, query) },
    get: { summary: 'Get a web form with its hosted link and embed snippet', handle: (id) => getWebForm(deps, id) },
    update: {
      summary: 'Update a web form',
      description: 'A new consent_text gets the next consent_version.',
      body: UpdateWebFormBody,
      handle: (id, body) => updateWebForm(deps, id, body),
    },
    remove: { summary: 'Delete a web form', description: 'Its pending submissions go with it; recorded consents stay.' },
    bulkDelete: { summary: 'Delete several web forms', handle: (ids) => deleteWebForms(deps, ids) },
  }).post('/preview', ({ body }) => ok({ html: previewPage(deps, body) }), {
    body: PreviewBody,
    response: { 200: Envelope(PreviewSchema), ...commonErrors },
    detail: requires('web_forms.read', 'Preview a web form', {
      tags: ['web forms'],
      description: "The hosted page of a form as being edited (the console builder's live preview); nothing is saved.",
    }),
  })
}

const tags = ['web forms (public)']
const NO_STORE = 'no-store, private'

/**
 * The public side of web forms (no API key: visitors use them): GET /f/{public_id} (the
 * hosted page), GET /f/{public_id}/challenge (a proof-of-work challenge for embedded
 * copies), POST /f/{public_id} (a submission, form-encoded or JSON; CORS for the form's
 * allowed origins), GET and POST /f/confirm/{token} (double opt-in: the GET shows a button,
 * only the POST confirms), GET /f/pow.js (the solver). Submissions and confirmations are
 * throttled per client IP.
 */
export function webFormPublicRoutes(deps: Deps) {
  const limiter = createRateLimiter()
  // A solved challenge is good for one submission: signatures seen, until they expire.
  const used = new Map<string, number>()
  type Ctx = { request: Request; server: { requestIP(r: Request): { address: string } | null } | null }
  const clientOf = ({ request, server }: Ctx): ClientInfo => ({
    ip: clientAddress(request, server, deps.config.trust_proxy),
    user_agent: request.headers.get('user-agent')?.slice(0, 512) ?? null,
  })
  const throttle = (client: ClientInfo) => {
    const d = limiter.take(client.ip ?? 'unknown', deps.config.web_form_rate_per_minute, deps.clock.now())
    if (!d.allowed) throw new AppError('rate_limited', `Too many submissions from your address; try again in ${d.resetSeconds} s.`)
  }
  const wantsJson = (request: Request) => {
    const type = request.headers.get('content-type') ?? ''
    return type.toLowerCase().startsWith('application/json') || (request.headers.get('accept') ?? '').toLowerCase().startsWith('application/json')
  }
  const notFound = () => page(404, 'Form not found', para('There is no form at this address. It may have been removed.'))
  /** The CORS headers for a request from a page of one of the form's allowed origins (none for any other). */
  const corsFor = (request: Request, allowed: string[]): Record<string, string> => {
    const origin = request.headers.get('origin')
    if (!origin || !allowed.includes(origin)) return {}
    return { 'access-control-allow-origin': origin, vary: 'Origin' }
  }
  const withHeaders = (res: Response, headers: Record<string, string>) => {
    for (const [k, v] of Object.entries(headers)) res.headers.set(k, v)
    return res
  }
  const redirect = (url: string) => new Response(null, { status: 303, headers: { location: url, 'cache-control': NO_STORE } })

  return new Elysia()
    .get(
      '/f/pow.js',
      () => new Response(SOLVER_JS, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600' } }),
      {
        detail: publicRoute('The proof-of-work solver script of web forms', tags),
      },
    )
    .get(
      '/f/confirm/:token',
      ({ params }) => {
        const state = confirmState(deps, params.token)
        if (state.kind === 'invalid') return page(404, 'Link not valid', para('This confirmation link is not valid. It may have been copied incompletely.'))
        if (state.kind === 'expired') return page(410, 'Link expired', para('This confirmation link has expired. Fill in the form again to get a new one.'))
        if (state.kind === 'confirmed') return page(200, 'Already confirmed', para('This address is already confirmed. Nothing more to do.'))
        return page(200, 'Confirm your subscription', confirmButton(state.form.name, state.submission.email))
      },
      { params: ConfirmParams, detail: publicRoute('Double opt-in confirmation page (a button that posts; a GET changes nothing)', tags) },
    )
    .post(
      '/f/confirm/:token',
      (ctx) => {
        const client = clientOf(ctx)
        throttle(client)
        const before = confirmState(deps, ctx.params.token)
        if (before.kind === 'invalid') return page(404, 'Link not valid', para('This confirmation link is not valid. It may have been copied incompletely.'))
        if (before.kind === 'expired') return page(410, 'Link expired', para('This confirmation link has expired. Fill in the form again to get a new one.'))
        if (before.kind === 'confirmed') return page(200, 'Already confirmed', para('This address is already confirmed. Nothing more to do.'))
        confirmSubmission(deps, ctx.params.token, client)
        return page(200, 'Subscription confirmed', para(`Thank you: ${before.submission.email} is subscribed to ${before.form.name}.`))
      },
      {
        params: ConfirmParams,
        body: SubmissionBody,
        detail: {
          ...publicRoute('Confirm a double opt-in submission (creates or updates the contact, records the consent)', tags),
          'x-content-types': ['application/x-www-form-urlencoded', 'multipart/form-data'],
        },
      },
    )
    .get(
      '/f/:public_id',
      async ({ params }) => {
        const form = findPublicForm(deps, params.public_id)
        if (!form) return notFound()
        const challenge = JSON.stringify(await newChallenge(deps, form.public_id))
        return new Response(hostedPage(deps.config.public_url, form, formDefinitions(deps), challenge), {
          headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': NO_STORE },
        })
      },
      { params: PublicIdParams, detail: publicRoute('The hosted page of a web form', tags) },
    )
    .get(
      '/f/:public_id/challenge',
      async ({ params, request }) => {
        const form = findPublicForm(deps, params.public_id)
        if (!form) throw new AppError('not_found', 'No web form with this id.')
        const res = Response.json(ok(await newChallenge(deps, form.public_id)), { headers: { 'cache-control': NO_STORE } })
        return withHeaders(res, corsFor(request, form.allowed_origins))
      },
      { params: PublicIdParams, detail: publicRoute('A proof-of-work challenge for an embedded copy of a web form', tags) },
    )
    .options(
      '/f/:public_id',
      ({ params, request }) => {
        const form = findPublicForm(deps, params.public_id)
        const cors = form ? corsFor(request, form.allowed_origins) : {}
        if (!cors['access-control-allow-origin']) return new Response(null, { status: 403 })
        return new Response(null, {
          status: 204,
          headers: { ...cors, 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'content-type, accept', 'access-control-max-age': '600' },
        })
      },
      { params: PublicIdParams, detail: publicRoute('CORS preflight of a web form post', tags) },
    )
    .post(
      '/f/:public_id',
      async (ctx) => {
        const { params, request } = ctx
        const json = wantsJson(request)
        const client = clientOf(ctx)
        throttle(client)
        const form = findPublicForm(deps, params.public_id)
        if (!form) {
          if (json) throw new AppError('not_found', 'No web form with this id.')
          return notFound()
        }
        const cors = corsFor(request, form.allowed_origins)
        const origin = request.headers.get('origin')
        // A browser names the page that posts; only our own pages and the listed origins may.
        if (origin && origin !== new URL(deps.config.public_url).origin && !cors['access-control-allow-origin'])
          throw new AppError('forbidden', 'This form does not accept posts from this site; add its origin to allowed_origins.')
        const body = (ctx.body ?? {}) as Record<string, unknown>
        const success = () => {
          if (json) return withHeaders(Response.json(ok({ message: form.success_message })), cors)
          return form.success_url ? redirect(form.success_url) : page(200, form.name, para(form.success_message))
        }
        // Bots fill every field: they get the success answer and nothing is stored.
        if (typeof body[HONEYPOT_FIELD] === 'string' && body[HONEYPOT_FIELD] !== '') return success()
        try {
          const challenge = await checkChallenge(deps, form.public_id, body[CHALLENGE_FIELD])
          if (!challenge.ok) throw new AppError('validation_failed', 'The request data is invalid.', { [CHALLENGE_FIELD]: [challenge.reason] })
          const now = deps.clock.now()
          for (const [sig, exp] of used) if (exp <= now) used.delete(sig)
          if (used.has(challenge.signature))
            throw new AppError('validation_failed', 'The request data is invalid.', { [CHALLENGE_FIELD]: ['was used already: reload the page'] })
          await submitForm(deps, form, body, client)
          used.set(challenge.signature, challenge.expiresAt)
          return success()
        } catch (e) {
          if (json || !(e instanceof AppError) || e.code !== 'validation_failed') throw e
          if (form.failure_url) return redirect(form.failure_url)
          return page(422, form.name, para(form.failure_message) + problemList(e.details ?? {}))
        }
      },
      {
        params: PublicIdParams,
        body: SubmissionBody,
        detail: {
          ...publicRoute('Submit a web form (form-encoded from a page, or JSON)', tags),
          'x-content-types': ['application/x-www-form-urlencoded', 'multipart/form-data', 'application/json'],
        },
      },
    )
}
