import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import {
  activityLogs,
  broadcastCounts,
  broadcastRecipients,
  broadcasts,
  broadcastVersions,
  contacts,
  events,
  lists,
  segments,
  type ContactStatus,
} from '../../src/db/schema'
import { createBroadcast } from '../../src/modules/broadcasts/service'
import type { CreateBroadcastInput } from '../../src/modules/broadcasts/model'
import { testApp, type TestApp } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'

/**
 * A test app with a verified sending domain news.example, and an audience:
 * list 1 "news": a1..a5@x.test and c1@y.test subscribed, a6@x.test unsubscribed;
 * list 2 "vip": a1@x.test (also on news), b1@y.test, b2@y.test subscribed;
 * list 3 "blocked": b2@y.test unsubscribed (an exclusion list excludes any status);
 * segment 1 "y": email ends with @y.test; segment 2 "a2": email is a2@x.test.
 */
function seeded(): TestApp {
  const t = testApp()
  const now = t.deps.clock.now()
  const db = t.deps.db
  db.$client.run(
    "INSERT INTO sending_domains (id, name, status, dkim_selector, dkim_private_key, dkim_public_key, return_path_host, created_at, updated_at) VALUES (1, 'news.example', 'verified', 'mr', '-', '-', 'rp.news.example', 0, 0)",
  )
  db.$client.run(
    "INSERT INTO sending_domains (id, name, status, dkim_selector, dkim_private_key, dkim_public_key, return_path_host, created_at, updated_at) VALUES (2, 'pending.example', 'pending', 'mr', '-', '-', 'rp.pending.example', 0, 0)",
  )
  db.insert(lists)
    .values(['news', 'vip', 'blocked'].map((name) => ({ name, created_at: now, updated_at: now })))
    .run()
  const people: Array<[number, string, ContactStatus]> = [
    ...[1, 2, 3, 4, 5].map((i): [number, string, ContactStatus] => [1, `a${i}@x.test`, 'subscribed']),
    [1, 'a6@x.test', 'unsubscribed'],
    [1, 'c1@y.test', 'subscribed'],
    [2, 'a1@x.test', 'subscribed'],
    [2, 'b1@y.test', 'subscribed'],
    [2, 'b2@y.test', 'subscribed'],
    [3, 'b2@y.test', 'unsubscribed'],
  ]
  db.insert(contacts)
    .values(people.map(([list_id, email, status]) => ({ list_id, email, status, first_name: 'Ann', created_at: now, updated_at: now })))
    .run()
  db.insert(segments)
    .values([
      { name: 'y', description: '', rules: { all: [{ field: 'email', op: 'ends_with', value: '@y.test' }] }, created_at: now, updated_at: now },
      { name: 'a2', description: '', rules: { all: [{ field: 'email', op: 'eq', value: 'a2@x.test' }] }, created_at: now, updated_at: now },
    ])
    .run()
  return t
}

const valid = { name: 'November news', from: 'News <news@news.example>', subject: 'Hello {{first_name}}', html: '<p>Hi {{first_name}}</p>', list_ids: [1] }

/** A broadcast made through the service, optionally moved to a status as the runner would. */
function make(ctx: ScenarioContext, extra: Partial<CreateBroadcastInput> = {}, status?: string, columns: Record<string, unknown> = {}): number {
  const id = createBroadcast(ctx.t.deps, { ...valid, ...extra }).id
  if (status || Object.keys(columns).length)
    ctx.t.deps.db
      .update(broadcasts)
      .set({ ...(status ? { status: status as 'draft' } : {}), ...columns })
      .where(eq(broadcasts.id, id))
      .run()
  return id
}

/** Recipient rows as the engine writes them: one per address, in these states. */
function addRecipients(ctx: ScenarioContext, id: number, rows: Array<{ email: string; state: string; version_id?: number | null; opened_at?: number }>) {
  ctx.t.deps.db
    .insert(broadcastRecipients)
    .values(
      rows.map((r, i) => ({
        broadcast_id: id,
        contact_id: i + 1,
        list_id: 1,
        email: r.email,
        state: r.state as 'pending',
        version_id: r.version_id ?? null,
        opened_at: r.opened_at ?? null,
        updated_at: ctx.t.deps.clock.now(),
      })),
    )
    .run()
}

function setCounts(ctx: ScenarioContext, id: number, versionId: number, metrics: Record<string, number>) {
  ctx.t.deps.db
    .insert(broadcastCounts)
    .values(Object.entries(metrics).map(([metric, n]) => ({ broadcast_id: id, version_id: versionId, metric, n })))
    .run()
}

const statusOf = (ctx: ScenarioContext, id: number) => ctx.t.deps.db.select().from(broadcasts).where(eq(broadcasts.id, id)).get()!
const NOW = '2026-03-01T12:00:30.000Z'
const LATER = '2026-03-02T09:00:00.000Z'

const crud: Scenario[] = [
  {
    name: 'create a draft',
    method: 'POST',
    url: '/api/v2/broadcasts',
    body: { ...valid, timezone: 'Europe/Paris', tags: ['nov'], split_test: null, max_bounce_rate: 0.05 },
    status: 201,
    json: {
      data: {
        status: 'draft',
        from: 'News <news@news.example>',
        list_ids: [1],
        track_opens: true,
        timezone: 'Europe/Paris',
        max_bounce_rate: 0.05,
        counts: { total: 0, pending: 0, sent: 0, skipped: 0, failed: 0, bounced: 0, opened: 0, clicked: 0 },
        progress: 0,
        send_at: null,
        created_at: NOW,
      },
    },
    after: (ctx, reply) => {
      expect(reply.body.data.archive_id).toMatch(/^[A-Za-z0-9_-]{22}$/)
      const log = ctx.t.deps.db.select().from(activityLogs).where(eq(activityLogs.action, 'broadcasts.create')).get()
      expect(log?.target_id).toBe(String(reply.body.data.id))
    },
  },
  {
    name: 'a from on an unverified domain',
    method: 'POST',
    url: '/api/v2/broadcasts',
    body: { ...valid, from: 'x@pending.example' },
    status: 422,
    code: 'validation_failed',
    details: { from: ['pending.example is not a verified sending domain (add it under /api/v2/sending-domains and verify it)'] },
  },
  {
    name: 'no content',
    method: 'POST',
    url: '/api/v2/broadcasts',
    body: { ...valid, html: undefined },
    status: 422,
    details: { html: ['a broadcast needs html, text or template_id'] },
  },
  { name: 'html and a template', method: 'POST', url: '/api/v2/broadcasts', body: { ...valid, template_id: 1 }, status: 422, detailFields: ['template_id'] },
  {
    name: 'references that do not exist',
    method: 'POST',
    url: '/api/v2/broadcasts',
    body: { ...valid, list_ids: [1, 99], segment_id: 98, exclude_segment_ids: [97], pool_id: 5 },
    status: 422,
    details: {
      list_ids: ['no list with id 99'],
      segment_id: ['no segment with id 98'],
      exclude_segment_ids: ['no segment with id 97'],
      pool_id: ['no IP pool with id 5'],
    },
  },
  {
    name: 'an unknown time zone',
    method: 'POST',
    url: '/api/v2/broadcasts',
    body: { ...valid, timezone: 'Mars/Olympus' },
    status: 422,
    detailFields: ['timezone'],
  },
  {
    name: 'schema and semantic failures in one answer',
    method: 'POST',
    url: '/api/v2/broadcasts',
    body: { from: 'x@pending.example', subject: 's', html: 'h', send_rate_per_minute: 0 },
    status: 422,
    detailFields: ['name', 'from', 'send_rate_per_minute'],
  },
  {
    name: 'a link split test without its link',
    method: 'POST',
    url: '/api/v2/broadcasts',
    body: { ...valid, version_mode: 'split_test', split_test: { sample_percent: 20, metric: 'link_click_rate', wait_seconds: 3600, auto_send_winner: true } },
    status: 422,
    detailFields: ['split_test.link_url'],
  },
  {
    name: 'a split test without its settings',
    method: 'POST',
    url: '/api/v2/broadcasts',
    body: { ...valid, version_mode: 'split_test' },
    status: 422,
    details: { split_test: ['is required when version_mode is split_test'] },
  },
  {
    name: 'an edit to split test mode on a broadcast without settings',
    method: 'PATCH',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}`,
    before: (ctx) => make(ctx),
    body: { version_mode: 'split_test' },
    status: 422,
    detailFields: ['split_test'],
  },
  {
    name: 'a send window with a bad zone and equal hours',
    method: 'POST',
    url: '/api/v2/broadcasts',
    body: { ...valid, send_window: { start_hour: 9, end_hour: 9, timezone: 'Nowhere/Town' } },
    status: 422,
    detailFields: ['send_window.end_hour', 'send_window.timezone'],
  },
  {
    name: 'list filtered by status, newest first, without bodies',
    method: 'GET',
    url: '/api/v2/broadcasts?status=draft',
    before: (ctx) => [make(ctx), make(ctx, {}, 'sending'), make(ctx)],
    status: 200,
    json: (ctx) => ({ data: [{ id: ctx.setup[2] }, { id: ctx.setup[0] }], meta: { total: 2 } }),
    after: (_ctx, reply) => expect(reply.body.data[0].html).toBeUndefined(),
  },
  { name: 'get a missing broadcast', method: 'GET', url: '/api/v2/broadcasts/9', status: 404, code: 'not_found' },
  {
    name: 'the view reads counts and progress from broadcast_counts',
    method: 'GET',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}`,
    before: (ctx) => {
      const id = make(ctx, {}, 'sending')
      setCounts(ctx, id, 0, { pending: 5, queued: 1, sent: 3, skipped: 1, bounced: 0, opened: 2, clicked: 1 })
      setCounts(ctx, id, 7, { sent: 99 })
      return id
    },
    status: 200,
    json: { data: { status: 'sending', counts: { total: 10, pending: 6, sent: 3, skipped: 1, failed: 0, bounced: 0, opened: 2, clicked: 1 }, progress: 0.4 } },
  },
  {
    name: 'edit a draft',
    method: 'PATCH',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}`,
    before: (ctx) => make(ctx),
    body: { subject: 'New subject', html: null, text: 'plain', list_ids: [1, 2, 2] },
    status: 200,
    json: { data: { subject: 'New subject', html: null, text: 'plain', list_ids: [1, 2] } },
  },
  {
    name: 'edit that removes all content',
    method: 'PATCH',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}`,
    before: (ctx) => make(ctx),
    body: { html: null },
    status: 422,
    detailFields: ['html'],
  },
  {
    name: 'edit while sending',
    method: 'PATCH',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}`,
    before: (ctx) => make(ctx, {}, 'sending'),
    body: { subject: 'x' },
    status: 409,
    code: 'conflict',
    message: 'is sending',
  },
  {
    name: 'delete a draft',
    method: 'DELETE',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}`,
    before: (ctx) => make(ctx),
    status: 200,
    json: { data: { name: 'November news' } },
    after: (ctx) => expect(ctx.t.deps.db.select().from(broadcasts).all()).toHaveLength(0),
  },
  {
    name: 'delete while sending',
    method: 'DELETE',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}`,
    before: (ctx) => make(ctx, {}, 'sending'),
    status: 409,
    message: 'pause or cancel',
  },
  {
    name: 'bulk delete',
    method: 'POST',
    url: '/api/v2/broadcasts/bulk-delete',
    before: (ctx) => [make(ctx), make(ctx, {}, 'sent')],
    body: (ctx) => ({ ids: [...ctx.setup, 50] }),
    status: 200,
    json: (ctx) => ({ data: { deleted: ctx.setup, not_found: [50] } }),
  },
  {
    name: 'bulk delete with a running broadcast',
    method: 'POST',
    url: '/api/v2/broadcasts/bulk-delete',
    before: (ctx) => [make(ctx), make(ctx, {}, 'preparing')],
    body: (ctx) => ({ ids: ctx.setup }),
    status: 409,
    message: '(preparing)',
    after: (ctx) => expect(ctx.t.deps.db.select().from(broadcasts).all()).toHaveLength(2),
  },
]

const transitions: Scenario[] = [
  {
    name: 'schedule without an audience',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/schedule`,
    before: (ctx) => make(ctx, { list_ids: [] }),
    body: {},
    status: 422,
    details: { list_ids: ['a broadcast needs list_ids or segment_id before it is scheduled'] },
  },
  {
    name: 'schedule a draft for later, ringing the doorbell',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup.id}/schedule`,
    before: (ctx) => {
      const rings = { n: 0 }
      ctx.t.deps.doorbell.attach({ wake: () => rings.n++ })
      return { id: make(ctx), rings }
    },
    body: { send_at: LATER },
    status: 200,
    json: { data: { status: 'scheduled', send_at: LATER } },
    after: (ctx) => {
      expect(ctx.setup.rings.n).toBe(1)
      const log = ctx.t.deps.db.select().from(activityLogs).where(eq(activityLogs.action, 'broadcasts.send')).get()
      expect(log).toMatchObject({ target_type: 'broadcasts', target_id: String(ctx.setup.id), outcome: 'success' })
    },
  },
  {
    name: 'schedule with no body means now',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/schedule`,
    before: (ctx) => make(ctx),
    status: 200,
    json: { data: { status: 'scheduled', send_at: NOW } },
  },
  {
    name: 'schedule in the past means now',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/schedule`,
    before: (ctx) => make(ctx),
    body: { send_at: '2020-01-01T00:00:00Z' },
    status: 200,
    json: { data: { send_at: NOW } },
  },
  {
    name: 'schedule a split test with one version',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/schedule`,
    before: (ctx) => {
      const id = make(ctx, { version_mode: 'split_test', split_test: { sample_percent: 10, metric: 'click_rate', wait_seconds: 600, auto_send_winner: false } })
      const now = ctx.t.deps.clock.now()
      ctx.t.deps.db.insert(broadcastVersions).values({ broadcast_id: id, name: 'A', created_at: now, updated_at: now }).run()
      return id
    },
    status: 422,
    details: { version_mode: ['a split test needs at least two versions'] },
  },
  {
    name: 'schedule twice',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/schedule`,
    before: (ctx) => make(ctx, {}, 'scheduled'),
    status: 409,
    message: 'is scheduled',
  },
  {
    name: 'schedule a broadcast paused before it started',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/schedule`,
    before: (ctx) => make(ctx, {}, 'paused'),
    body: { send_at: LATER },
    status: 200,
    json: { data: { status: 'scheduled', status_reason: null } },
  },
  {
    name: 'schedule a broadcast paused while sending',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/schedule`,
    before: (ctx) => {
      const id = make(ctx, {}, 'paused')
      addRecipients(ctx, id, [{ email: 'a1@x.test', state: 'sent' }])
      return id
    },
    status: 409,
    message: 'is paused',
  },
  {
    name: 'pause a sending broadcast',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/pause`,
    before: (ctx) => make(ctx, {}, 'sending'),
    status: 200,
    json: { data: { status: 'paused', status_reason: 'paused by scenario admin' } },
    after: (ctx) => {
      const ev = ctx.t.deps.db.select().from(events).where(eq(events.kind, 'broadcast.paused')).get()
      expect(ev).toMatchObject({ broadcast_id: ctx.setup, data: { broadcast_id: ctx.setup, reason: 'paused by scenario admin', from_status: 'sending' } })
    },
  },
  {
    name: 'pause a draft',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/pause`,
    before: (ctx) => make(ctx),
    status: 409,
    message: 'Broadcast 1 is draft',
  },
  {
    name: 'resume before any recipient row: scheduled for now',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/resume`,
    before: (ctx) => make(ctx, {}, 'paused', { send_at: Date.parse(LATER), status_reason: 'x' }),
    status: 200,
    json: { data: { status: 'scheduled', send_at: NOW, status_reason: null } },
  },
  {
    name: 'resume with its snapshot complete (broadcast.started): sending',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/resume`,
    before: (ctx) => {
      const id = make(ctx, {}, 'paused')
      addRecipients(ctx, id, [{ email: 'a1@x.test', state: 'pending' }])
      ctx.t.deps.db.insert(events).values({ kind: 'broadcast.started', broadcast_id: id, created_at: 0, data: {} }).run()
      return id
    },
    status: 200,
    json: { data: { status: 'sending' } },
  },
  {
    name: 'resume of one paused mid-snapshot (rows, no broadcast.started): preparing, never sending with part of its audience',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/resume`,
    before: (ctx) => {
      const id = make(ctx, {}, 'paused', { prepare_cursor: 3 })
      addRecipients(ctx, id, [{ email: 'a1@x.test', state: 'queued' }])
      return id
    },
    status: 200,
    json: { data: { status: 'preparing' } },
  },
  {
    name: 'resume a sent broadcast',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/resume`,
    before: (ctx) => make(ctx, {}, 'sent'),
    status: 409,
    message: 'is sent',
  },
  {
    name: 'cancel a sending broadcast leaves pending rows pending',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/cancel`,
    before: (ctx) => {
      const id = make(ctx, {}, 'sending')
      addRecipients(ctx, id, [
        { email: 'a1@x.test', state: 'sent' },
        { email: 'a2@x.test', state: 'pending' },
      ])
      return id
    },
    status: 200,
    json: { data: { status: 'cancelled', finished_at: NOW } },
    after: (ctx) => {
      const pending = ctx.t.deps.db.select().from(broadcastRecipients).where(eq(broadcastRecipients.state, 'pending')).all()
      expect(pending.map((r) => r.email)).toEqual(['a2@x.test'])
    },
  },
  {
    name: 'cancel a draft',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/cancel`,
    before: (ctx) => make(ctx),
    status: 409,
    message: 'is draft',
  },
  { name: 'cancel a missing broadcast', method: 'POST', url: '/api/v2/broadcasts/77/cancel', status: 404 },
  {
    name: 'duplicate with versions',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/duplicate`,
    before: (ctx) => {
      const id = make(ctx, {}, 'sent', { started_at: 1, finished_at: 2 })
      const now = ctx.t.deps.clock.now()
      ctx.t.deps.db.insert(broadcastVersions).values({ broadcast_id: id, name: 'B', subject: 'Other', created_at: now, updated_at: now }).run()
      return id
    },
    status: 201,
    json: { data: { id: 2, name: 'November news (copy)', status: 'draft', started_at: null, finished_at: null, subject: 'Hello {{first_name}}' } },
    after: (ctx, reply) => {
      const copy = statusOf(ctx, 2)
      expect(copy.archive_id).not.toBe(statusOf(ctx, ctx.setup).archive_id)
      expect(ctx.t.deps.db.select().from(broadcastVersions).where(eq(broadcastVersions.broadcast_id, 2)).all()).toMatchObject([{ name: 'B', subject: 'Other' }])
      expect(reply.body.data.id).toBe(2)
    },
  },
  {
    name: 'resend to non-openers of a sent broadcast',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/resend-to-non-openers`,
    before: (ctx) => make(ctx, {}, 'sent'),
    status: 201,
    json: (ctx) => ({ data: { name: 'November news (non-openers)', status: 'draft', source_broadcast_id: ctx.setup, list_ids: [], html: valid.html } }),
  },
  {
    name: 'a resend to non-openers can be scheduled without lists',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/schedule`,
    before: (ctx) => {
      const id = make(ctx, {}, 'sent')
      return make(ctx, { list_ids: [] }, undefined, { source_broadcast_id: id })
    },
    status: 200,
    json: { data: { status: 'scheduled' } },
  },
  {
    name: 'resend to non-openers of a draft',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/resend-to-non-openers`,
    before: (ctx) => make(ctx),
    status: 409,
    message: 'is draft',
  },
]

/** POST /{id}/test: test copies through the engine's renderer, queued as messages marked as tests and counted nowhere. */
const testSends: Scenario[] = [
  {
    name: 'a test send queues one copy per address, marked as a test, with no recipient rows',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/test`,
    before: (ctx) => make(ctx),
    body: { to: ['qa@example.org', 'boss@example.org'] },
    status: 202,
    after: (ctx, reply) => {
      const ids = reply.body.data.message_ids as string[]
      expect(ids).toHaveLength(2)
      const stored = ctx.t.deps.db.$client.query(`SELECT subject, tags, broadcast_id FROM messages WHERE id IN (?, ?)`).all(ids[0]!, ids[1]!) as Array<{
        subject: string
        tags: string
        broadcast_id: number | null
      }>
      expect(stored).toHaveLength(2)
      for (const m of stored) {
        expect(m.subject.startsWith('[Test] ')).toBe(true)
        expect(JSON.parse(m.tags)).toEqual(['test'])
        expect(m.broadcast_id).toBeNull()
      }
      expect(ctx.t.deps.db.select().from(broadcastRecipients).all()).toHaveLength(0)
    },
  },
  { name: 'no addresses', method: 'POST', url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/test`, before: (ctx) => make(ctx), body: { to: [] }, status: 422 },
  { name: 'an unknown broadcast', method: 'POST', url: '/api/v2/broadcasts/999/test', body: { to: ['qa@example.org'] }, status: 404 },
  {
    name: 'a test send without broadcasts.send',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/test`,
    key: { permissions: ['broadcasts.read', 'broadcasts.update'] },
    before: (ctx) => make(ctx),
    body: { to: ['qa@example.org'] },
    status: 403,
  },
]

const permissions: Scenario[] = [
  { name: 'no key', method: 'GET', url: '/api/v2/broadcasts', key: null, status: 401 },
  {
    name: 'pause without broadcasts.send',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/pause`,
    key: { permissions: ['broadcasts.read', 'broadcasts.create', 'broadcasts.update', 'broadcasts.delete'] },
    before: (ctx) => make(ctx, {}, 'sending'),
    status: 403,
    code: 'forbidden',
    message: 'broadcasts.send',
  },
  {
    name: 'schedule without broadcasts.send',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/schedule`,
    key: { permissions: ['broadcasts.update'] },
    before: (ctx) => make(ctx),
    status: 403,
  },
  {
    name: 'resend without broadcasts.send',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/resend-to-non-openers`,
    key: { permissions: ['broadcasts.create'] },
    before: (ctx) => make(ctx, {}, 'sent'),
    status: 403,
  },
  {
    name: 'pause with broadcasts.send',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/pause`,
    key: { permissions: ['broadcasts.send'] },
    before: (ctx) => make(ctx, {}, 'sending'),
    status: 200,
  },
  { name: 'create with only broadcasts.read', method: 'POST', url: '/api/v2/broadcasts', key: { permissions: ['broadcasts.read'] }, body: valid, status: 403 },
]

const recipientsAndVersions: Scenario[] = [
  {
    name: 'recipients filtered by state',
    method: 'GET',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/recipients?state=sent&per_page=1`,
    before: (ctx) => {
      const id = make(ctx, {}, 'sending')
      addRecipients(ctx, id, [
        { email: 'a1@x.test', state: 'sent', opened_at: Date.parse(NOW) },
        { email: 'a2@x.test', state: 'pending' },
        { email: 'a3@x.test', state: 'sent' },
      ])
      return id
    },
    status: 200,
    json: {
      data: [
        { email: 'a1@x.test', state: 'sent', opened_at: NOW, clicked_at: null, list_id: 1, contact_id: 1, updated_at: NOW, reason: null, message_id: null },
      ],
      meta: { total: 2, per_page: 1, last_page: 2 },
    },
  },
  {
    name: 'the last page of recipients, read from the far end, in id order',
    method: 'GET',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/recipients?per_page=2&page=3`,
    before: (ctx) => {
      const id = make(ctx, {}, 'sending')
      addRecipients(
        ctx,
        id,
        [1, 2, 3, 4, 5].map((i) => ({ email: `r${i}@x.test`, state: 'pending' })),
      )
      return id
    },
    status: 200,
    json: { data: [{ email: 'r5@x.test' }], meta: { total: 5, current_page: 3, last_page: 3 } },
  },
  {
    name: 'page 2 of recipients past the middle',
    method: 'GET',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/recipients?per_page=2&page=2`,
    before: (ctx) => {
      const id = make(ctx, {}, 'sending')
      addRecipients(
        ctx,
        id,
        [1, 2, 3, 4, 5].map((i) => ({ email: `r${i}@x.test`, state: 'pending' })),
      )
      return id
    },
    status: 200,
    json: { data: [{ email: 'r3@x.test' }, { email: 'r4@x.test' }] },
  },
  {
    name: 'recipients filtered by version',
    method: 'GET',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/recipients?version_id=4`,
    before: (ctx) => {
      const id = make(ctx, {}, 'sending')
      addRecipients(ctx, id, [
        { email: 'a1@x.test', state: 'sent', version_id: 3 },
        { email: 'a2@x.test', state: 'pending', version_id: 4 },
      ])
      return id
    },
    status: 200,
    json: { data: [{ email: 'a2@x.test', version_id: 4 }], meta: { total: 1 } },
  },
  {
    name: 'recipients with an unknown state',
    method: 'GET',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/recipients?state=lost`,
    before: (ctx) => make(ctx),
    status: 422,
    detailFields: ['state'],
  },
  { name: 'recipients of a missing broadcast', method: 'GET', url: '/api/v2/broadcasts/5/recipients', status: 404 },
  {
    name: 'add a version',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/versions`,
    before: (ctx) => make(ctx),
    body: { subject: 'Variant B', weight: 2, send_at: LATER },
    status: 201,
    json: (ctx) => ({ data: { broadcast_id: ctx.setup, name: 'Version 1', subject: 'Variant B', weight: 2, send_at: LATER, html: null } }),
  },
  {
    name: 'add a version with a missing template',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/versions`,
    before: (ctx) => make(ctx),
    body: { template_id: 40 },
    status: 422,
    detailFields: ['template_id'],
  },
  {
    name: 'add a version while sending',
    method: 'POST',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/versions`,
    before: (ctx) => make(ctx, {}, 'sending'),
    body: {},
    status: 409,
  },
  {
    name: 'list, update and delete versions',
    method: 'GET',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup}/versions`,
    before: async (ctx) => {
      const id = make(ctx)
      const url = `/api/v2/broadcasts/${id}/versions`
      const a = await ctx.t.call('POST', url, { key: ctx.admin, body: { name: 'A' } })
      const b = await ctx.t.call('POST', url, { key: ctx.admin, body: { name: 'B' } })
      const patched = await ctx.t.call('PATCH', `${url}/${a.body.data.id}`, { key: ctx.admin, body: { from_name: 'Ann', weight: 3 } })
      expect(patched.body.data).toMatchObject({ name: 'A', from_name: 'Ann', weight: 3 })
      const removed = await ctx.t.call('DELETE', `${url}/${b.body.data.id}`, { key: ctx.admin })
      expect(removed.body.data.name).toBe('B')
      return id
    },
    status: 200,
    json: { data: [{ name: 'A', weight: 3 }] },
    after: (_ctx, reply) => expect(reply.body.data).toHaveLength(1),
  },
  {
    name: 'a version of another broadcast is not found',
    method: 'PATCH',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup.other}/versions/${ctx.setup.vid}`,
    before: (ctx) => {
      const id = make(ctx)
      const other = make(ctx)
      const now = ctx.t.deps.clock.now()
      const vid = ctx.t.deps.db.insert(broadcastVersions).values({ broadcast_id: id, name: 'A', created_at: now, updated_at: now }).returning().get().id
      return { other, vid }
    },
    body: { name: 'x' },
    status: 404,
    message: 'has no version',
  },
  {
    name: 'delete a version while sending',
    method: 'DELETE',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup.id}/versions/${ctx.setup.vid}`,
    before: (ctx) => {
      const id = make(ctx, {}, 'sending')
      const now = ctx.t.deps.clock.now()
      const vid = ctx.t.deps.db.insert(broadcastVersions).values({ broadcast_id: id, name: 'A', created_at: now, updated_at: now }).returning().get().id
      return { id, vid }
    },
    status: 409,
    message: 'its versions can change',
  },
  {
    name: 'stats per broadcast, version and link',
    method: 'GET',
    url: (ctx) => `/api/v2/broadcasts/${ctx.setup.id}/stats`,
    before: (ctx) => {
      const id = make(
        ctx,
        { version_mode: 'split_test', split_test: { sample_percent: 10, metric: 'open_rate', wait_seconds: 3600, auto_send_winner: true } },
        'sent',
      )
      const now = ctx.t.deps.clock.now()
      const vid = ctx.t.deps.db.insert(broadcastVersions).values({ broadcast_id: id, name: 'A', created_at: now, updated_at: now }).returning().get().id
      ctx.t.deps.db.update(broadcasts).set({ split_phase: 'decided', winner_version_id: vid }).where(eq(broadcasts.id, id)).run()
      setCounts(ctx, id, 0, { sent: 8, bounced: 2, delivered: 8, opened: 5, clicked: 2, complained: 1, unsubscribed: 1 })
      setCounts(ctx, id, vid, { sent: 4, opened: 1 })
      const click = (url: string, message_id: string) =>
        ctx.t.deps.db.insert(events).values({ kind: 'message.clicked', created_at: now, broadcast_id: id, message_id, data: { url } }).run()
      click('https://a.example/', 'm1')
      click('https://a.example/', 'm1')
      click('https://a.example/', 'm2')
      click('https://b.example/', 'm1')
      // Another broadcast's click is not counted.
      ctx.t.deps.db
        .insert(events)
        .values({ kind: 'message.clicked', created_at: now, broadcast_id: 99, message_id: 'm9', data: { url: 'https://a.example/' } })
        .run()
      return { id, vid }
    },
    status: 200,
    json: (ctx) => ({
      data: {
        totals: {
          recipients: 10,
          sent: 10,
          delivered: 8,
          bounced: 2,
          complained: 1,
          unsubscribed: 1,
          unique_opens: 5,
          unique_clicks: 2,
          open_rate: 0.5,
          bounce_rate: 0.2,
        },
        versions: [{ version_id: ctx.setup.vid, name: 'A', recipients: 4, sent: 4, unique_opens: 1, open_rate: 0.25 }],
        links: [
          { url: 'https://a.example/', clicks: 3, unique_clicks: 2 },
          { url: 'https://b.example/', clicks: 1, unique_clicks: 1 },
        ],
        split_test: { metric: 'open_rate', phase: 'decided', winner_version_id: ctx.setup.vid },
      },
    }),
  },
]

const audienceCount = (body: Record<string, unknown>, total: number): Scenario => ({
  name: `audience ${JSON.stringify(body)} = ${total}`,
  method: 'POST',
  url: '/api/v2/broadcasts/audience-count',
  body,
  status: 200,
  equals: { success: true, data: { total } },
})

const audience: Scenario[] = [
  audienceCount({ list_ids: [1] }, 6),
  audienceCount({ list_ids: [1, 2] }, 8),
  audienceCount({ list_ids: [1, 2], exclude_list_ids: [3] }, 7),
  audienceCount({ list_ids: [1, 2], exclude_list_ids: [3], exclude_segment_ids: [2] }, 6),
  audienceCount({ list_ids: [1, 2], exclude_segment_ids: [1] }, 5),
  audienceCount({ segment_id: 1 }, 3),
  audienceCount({ list_ids: [1], segment_id: 1 }, 1),
  audienceCount({}, 0),
  {
    name: 'audience with a missing list',
    method: 'POST',
    url: '/api/v2/broadcasts/audience-count',
    body: { list_ids: [9] },
    status: 422,
    details: { list_ids: ['no list with id 9'] },
  },
  {
    name: 'the audience count is a read: no activity log entry',
    method: 'POST',
    url: '/api/v2/broadcasts/audience-count',
    key: { permissions: ['broadcasts.read'] },
    body: { list_ids: [2] },
    status: 200,
    after: (ctx) => expect(ctx.t.deps.db.select().from(activityLogs).all()).toHaveLength(0),
  },
]

const archive: Scenario[] = [
  {
    name: 'archive page of a sent, archived broadcast, without a key',
    method: 'GET',
    url: (ctx) => `/archive/${statusOf(ctx, ctx.setup).archive_id}`,
    key: null,
    before: (ctx) => make(ctx, { archive: true }, 'sent', { finished_at: Date.parse(NOW) }),
    status: 200,
    expectHeaders: { 'content-type': 'text/html' },
    // Personalization shows the renderer's placeholder values, never a recipient's data.
    expectedContent: ['<title>Hello Subscriber</title>', '&#60;p&#62;Hi Subscriber&#60;/p&#62;'],
    notExpectedContent: ['{{first_name}}'],
  },
  {
    name: 'archive page of a template broadcast shows the pinned version',
    method: 'GET',
    url: (ctx) => `/archive/${statusOf(ctx, ctx.setup).archive_id}`,
    key: null,
    before: async (ctx) => {
      const url = '/api/v2/templates'
      const tpl = await ctx.t.call('POST', url, {
        key: ctx.admin,
        body: { name: 'T', subject: 'From the template', html: '<p>Version one {{first_name}}</p>' },
      })
      await ctx.t.call('PATCH', `${url}/${tpl.body.data.id}`, { key: ctx.admin, body: { html: '<p>Version two</p>' } })
      // Pinned at the start to version 1; the active version (2) changed since.
      return make(ctx, { html: null, template_id: tpl.body.data.id, archive: true }, 'sent', { template_version_id: tpl.body.data.active_version_id })
    },
    status: 200,
    // The broadcast's own subject wins over the template's, as in the messages sent.
    expectedContent: ['<title>Hello Subscriber</title>', 'Version one Subscriber'],
    notExpectedContent: ['Version two', '{{first_name}}'],
  },
  {
    name: 'archive page of a template broadcast not pinned yet uses the active version',
    method: 'GET',
    url: (ctx) => `/archive/${statusOf(ctx, ctx.setup).archive_id}`,
    key: null,
    before: async (ctx) => {
      const tpl = await ctx.t.call('POST', '/api/v2/templates', { key: ctx.admin, body: { name: 'T', subject: 'S', text: 'Plain <words>' } })
      return make(ctx, { html: null, template_id: tpl.body.data.id, archive: true }, 'sent')
    },
    status: 200,
    expectedContent: ['Plain &#38;#60;words&#38;#62;'],
  },
  {
    name: 'archive page of a broadcast that did not opt in',
    method: 'GET',
    url: (ctx) => `/archive/${statusOf(ctx, ctx.setup).archive_id}`,
    key: null,
    before: (ctx) => make(ctx, {}, 'sent'),
    status: 404,
  },
  {
    name: 'archive page of an archived draft',
    method: 'GET',
    url: (ctx) => `/archive/${statusOf(ctx, ctx.setup).archive_id}`,
    key: null,
    before: (ctx) => make(ctx, { archive: true }),
    status: 404,
  },
  { name: 'archive page of an unknown id', method: 'GET', url: '/archive/nothing-here', key: null, status: 404 },
  {
    name: 'RSS feed of archived sent broadcasts',
    method: 'GET',
    url: '/archive/feed.xml',
    key: null,
    before: (ctx) => {
      make(ctx, { archive: true, subject: 'First issue' }, 'sent', { finished_at: Date.parse(NOW) })
      make(ctx, { archive: true, subject: 'Not sent yet' })
      make(ctx, { archive: false, subject: 'Private' }, 'sent')
      return statusOf(ctx, 1).archive_id
    },
    status: 200,
    expectHeaders: { 'content-type': 'application/rss+xml' },
    expectedContent: ['<rss version="2.0">', '<title>First issue</title>', '/archive/', 'Sun, 01 Mar 2026 12:00:30 GMT'],
    notExpectedContent: ['Not sent yet', 'Private'],
    after: (ctx, reply) => expect(reply.text).toContain(`/archive/${ctx.setup}</link>`),
  },
]

runScenarios('broadcasts: CRUD and validation', crud, { app: seeded })
runScenarios('broadcasts: transitions', transitions, { app: seeded })
runScenarios('broadcasts: permissions', permissions, { app: seeded })
runScenarios('broadcasts: test sends', testSends, { app: seeded })
runScenarios('broadcasts: recipients, versions, statistics', recipientsAndVersions, { app: seeded })
runScenarios('broadcasts: audience count', audience, { app: seeded })
runScenarios('broadcasts: public archive', archive, { app: seeded })

describe('broadcasts: events', () => {
  test('broadcast.started, paused and finished are known event kinds (filters and webhook subscriptions accept them)', async () => {
    const t = testApp({ webhooks_allow_private: true })
    const key = t.makeKey().key
    for (const kind of ['broadcast.started', 'broadcast.paused', 'broadcast.finished']) {
      const r = await t.call('GET', `/api/v2/events?kind=${kind}`, { key })
      expect(r.status).toBe(200)
    }
    const bad = await t.call('GET', '/api/v2/events?kind=broadcast.exploded', { key })
    expect(bad.status).toBe(422)
    const hook = await t.call('POST', '/api/v2/webhooks', {
      key,
      body: { endpoint: 'http://127.0.0.1:9/x', events: ['broadcast.started', 'broadcast.paused', 'broadcast.finished'] },
    })
    expect(hook.status).toBe(201)
  })

  test('pausing a broadcast the runner has already finished answers 409 naming the status', () => {
    const t = seeded()
    const id = createBroadcast(t.deps, valid).id
    t.deps.db
      .update(broadcasts)
      .set({ status: 'sent' })
      .where(and(eq(broadcasts.id, id)))
      .run()
    return t.call('POST', `/api/v2/broadcasts/${id}/pause`, { key: t.makeKey().key }).then((r) => {
      expect(r.status).toBe(409)
      expect(r.body.error.message).toContain('is sent')
    })
  })
})

describe('broadcasts: the single view', () => {
  test('GET /api/v2/broadcasts/{id} (prepared reads) shows flags as booleans, JSON columns parsed and the counters, as the list does', async () => {
    const t = seeded()
    const key = t.makeKey().key
    const id = createBroadcast(t.deps, {
      ...valid,
      track_opens: false,
      archive: true,
      tags: ['nov'],
      send_window: { start_hour: 9, end_hour: 17, timezone: 'Europe/Paris' },
    } as CreateBroadcastInput).id
    t.deps.db
      .insert(broadcastCounts)
      .values([
        { broadcast_id: id, version_id: 0, metric: 'total', n: 7 },
        { broadcast_id: id, version_id: 0, metric: 'pending', n: 2 },
        { broadcast_id: id, version_id: 0, metric: 'queued', n: 1 },
        { broadcast_id: id, version_id: 0, metric: 'sent', n: 4 },
        // Another version's counter is not the broadcast's.
        { broadcast_id: id, version_id: 99, metric: 'sent', n: 50 },
      ])
      .run()
    const one = await t.call('GET', `/api/v2/broadcasts/${id}`, { key })
    expect(one.status).toBe(200)
    expect(one.body.data).toMatchObject({
      id,
      track_opens: false,
      track_clicks: true,
      archive: true,
      tags: ['nov'],
      list_ids: [1],
      send_window: { start_hour: 9, end_hour: 17, timezone: 'Europe/Paris' },
      counts: { total: 7, pending: 3, sent: 4 },
      created_at: NOW,
    })
    const list = await t.call('GET', '/api/v2/broadcasts', { key })
    const summary = list.body.data.find((b: { id: number }) => b.id === id)
    for (const [k, v] of Object.entries(summary)) expect([k, one.body.data[k]]).toEqual([k, v])
    expect((await t.call('GET', '/api/v2/broadcasts/9999', { key })).status).toBe(404)
  })
})
