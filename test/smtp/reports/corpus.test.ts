/**
 * The scorer: every bounce and complaint of the labelled corpus (test/fixtures/reports/corpus,
 * written by its generate.ts) through classifyInbound, measured against the labels, printed,
 * and held to the aims of issue 17: at least 98 % read, at least 98 % precision on
 * suppression (a living address is never suppressed) and 90 % recall on dead addresses,
 * every complaint read, the status code right per recipient.
 */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { classifyInbound, type DsnRecipient } from '../../../src/smtp/reports'
import type { Label } from '../../fixtures/reports/corpus/generate'
import { FIXTURES } from './support'

const CORPUS = join(FIXTURES, 'corpus')
const labels = JSON.parse(readFileSync(join(CORPUS, 'labels.json'), 'utf8')) as Label[]
const ENVELOPE = { mailFrom: '', rcptTo: ['bounces@bounces.example.com'] }

interface Scored {
  label: Label
  entry: DsnRecipient | null
  why: string | null
}

async function score() {
  const dsn: Scored[] = []
  const arf: Array<{ label: Label; ok: boolean; why: string | null }> = []
  for (const label of labels) {
    const report = await classifyInbound(readFileSync(join(CORPUS, label.file)), ENVELOPE)
    if (label.kind === 'arf') {
      const ok =
        report.kind === 'arf' &&
        report.complaint &&
        report.feedbackType === label.feedback_type &&
        (label.recipient === null || report.recipient === label.recipient)
      arf.push({
        label,
        ok,
        why: ok
          ? null
          : `${report.kind}${report.kind === 'arf' ? ` ${report.feedbackType} ${report.recipient}` : report.kind === 'unknown' ? `: ${report.reason}` : ''}`,
      })
      continue
    }
    if (report.kind !== 'dsn') {
      dsn.push({ label, entry: null, why: report.kind === 'unknown' ? report.reason : `read as ${report.kind}` })
      continue
    }
    const entry = report.recipients.find((r) => [r.recipient, r.finalRecipient, r.originalRecipient].includes(label.recipient)) ?? null
    dsn.push({ label, entry, why: entry ? null : `recipient not found (read: ${report.recipients.map((r) => r.recipient).join(', ')})` })
  }
  return { dsn, arf }
}

const pct = (n: number, d: number) => (d === 0 ? 100 : (100 * n) / d)

test('the labelled corpus is read as well as the aims say', async () => {
  const { dsn, arf } = await score()
  const read = dsn.filter((s) => s.entry)
  const failures = dsn.filter((s) => s.label.action === 'failed')
  const truePos = failures.filter((s) => s.label.dead && s.entry?.suppress).length
  const falsePos = dsn.filter((s) => !s.label.dead && s.entry?.suppress)
  const missed = failures.filter((s) => s.label.dead && !s.entry?.suppress)
  const statusRight = read.filter((s) => s.entry!.status === s.label.status && s.entry!.action === s.label.action)
  const codeRight = read.filter((s) => s.entry!.smtpCode === (s.label.code ?? null))
  const reasonRight = read.filter((s) => s.entry!.reason === s.label.reason)
  const complaints = arf.filter((a) => a.ok)

  const line = (name: string, n: number, d: number) => `${name.padEnd(28)} ${String(n).padStart(4)} / ${String(d).padEnd(4)} ${pct(n, d).toFixed(1)} %`
  const rows = [
    `corpus: ${new Set(labels.map((l) => l.file)).size} files, ${labels.length} labelled recipients and complaints, ${new Set(labels.map((l) => l.layout)).size} layouts`,
    line('bounces read', read.length, dsn.length),
    line('suppression precision', truePos, truePos + falsePos.length),
    line('dead-address recall', truePos, truePos + missed.length),
    line('status and action right', statusRight.length, read.length),
    line('reply code right', codeRight.length, read.length),
    line('reason right', reasonRight.length, read.length),
    line('complaints read', complaints.length, arf.length),
  ]
  const problems = [
    ...dsn.filter((s) => !s.entry).map((s) => `unread ${s.label.file}: ${s.why}`),
    ...falsePos.map((s) => `living address suppressed ${s.label.file}: ${s.entry!.rule} ${s.entry!.status}`),
    ...missed.map((s) => `dead address kept ${s.label.file}: ${s.entry ? `${s.entry.rule} ${s.entry.status} ${s.entry.reason}` : 'unread'}`),
    ...read
      .filter((s) => !statusRight.includes(s))
      .map((s) => `status ${s.label.file}: ${s.entry!.action} ${s.entry!.status}, want ${s.label.action} ${s.label.status}`),
    ...read.filter((s) => !codeRight.includes(s)).map((s) => `code ${s.label.file}: ${s.entry!.smtpCode}, want ${s.label.code}`),
    ...read.filter((s) => !reasonRight.includes(s)).map((s) => `reason ${s.label.file}: ${s.entry!.reason}, want ${s.label.reason}`),
    ...arf.filter((a) => !a.ok).map((a) => `complaint ${a.label.file}: ${a.why}`),
  ]
  console.log([...rows, ...problems].join('\n'))

  // The corpus itself is as large as the issue asks.
  expect(new Set(labels.map((l) => l.file)).size).toBeGreaterThan(100)
  expect(new Set(labels.map((l) => l.layout)).size).toBeGreaterThanOrEqual(40)
  expect(pct(read.length, dsn.length)).toBeGreaterThanOrEqual(98)
  expect(pct(truePos, truePos + falsePos.length)).toBeGreaterThanOrEqual(98)
  expect(pct(truePos, truePos + missed.length)).toBeGreaterThanOrEqual(90)
  expect(complaints.length).toBe(arf.length)
  expect(pct(statusRight.length, read.length)).toBeGreaterThanOrEqual(98)
  expect(pct(codeRight.length, read.length)).toBeGreaterThanOrEqual(95)
  expect(pct(reasonRight.length, read.length)).toBeGreaterThanOrEqual(95)
})
