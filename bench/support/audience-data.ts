/**
 * The audience of bench/audience.ts: a deterministic (seeded) stream of contacts, written
 * to a CSV for the import and generated again, row for row the same, for the plain bulk
 * insert it is compared with. Nothing here holds more than one batch of rows.
 */
import { prng } from './prng'

/** A contact as the CSV has it; `plan` and `seats` are the two custom fields. */
export interface AudienceRow {
  email: string
  first_name: string
  last_name: string
  plan: 'free' | 'pro' | 'team'
  seats: number
}

/** What the generator produced, for checking the server's answers. */
export interface AudienceStats {
  rows: number
  bytes: number
  plans: Record<AudienceRow['plan'], number>
  /** Rows with plan = pro and seats >= SEGMENT_MIN_SEATS: the benchmark segment's count. */
  segmentMatches: number
}

/** The segment's seat threshold (fields.seats >= this). */
export const SEGMENT_MIN_SEATS = 10

/** The benchmark segment: three conditions, one on a column and two on custom fields. */
export const SEGMENT_RULES = {
  all: [
    { field: 'status', op: 'eq', value: 'subscribed' },
    { field: 'fields.plan', op: 'eq', value: 'pro' },
    { field: 'fields.seats', op: 'gte', value: SEGMENT_MIN_SEATS },
  ],
}

/** The custom fields the rows carry, as the benchmark creates them over the API. */
export const CUSTOM_FIELDS = [
  { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro', 'team'] },
  { key: 'seats', name: 'Seats', type: 'number', options: [] },
] as const

export const CSV_HEADER = 'email,first_name,last_name,plan,seats'

const FIRST = [
  'ann',
  'bob',
  'carla',
  'dmitri',
  'eve',
  'farid',
  'grace',
  'hiro',
  'ines',
  'jamal',
  'kate',
  'li',
  'maria',
  'noah',
  'olga',
  'pedro',
  'quinn',
  'rosa',
  'sven',
  'tara',
  'umar',
  'vera',
  'wei',
  'ximena',
  'yusuf',
  'zoe',
]
  .map((n) => n[0]!.toUpperCase() + n.slice(1))
  .concat(['José', 'Zoë', 'Björn', 'Renée'])
const LAST = [
  'Smith',
  'Jones',
  'Garcia',
  'Müller',
  'Rossi',
  'Nguyen',
  'Kowalski',
  'Okafor',
  'Dubois',
  'Tanaka',
  'Silva',
  'Novak',
  'Olsen',
  'Haddad',
  'Ivanova',
  'Kim',
  "O'Brien",
  'Smith, Jr.',
  'Øster',
  'Park',
]
const DOMAINS = ['example.com', 'example.org', 'example.net', 'mail.example', 'corp.example.com']

/** A name as the letters a-z of an address's local part ("Smith, Jr." -> "smithjr"). */
const ascii = (name: string) => name.toLowerCase().replace(/[^a-z]/g, '')

/**
 * Rows 1..count in batches of `batch`. Plans: free 60 %, pro 30 %, team 10 %; seats depend
 * on the plan (free 1-3, pro 1-25, team 5-500). Addresses are unique (they carry the row
 * number) and already in normal form (lower case), so stored values equal generated ones.
 */
export function* audienceBatches(count: number, seed: number, batch: number): Generator<AudienceRow[]> {
  const rand = prng(seed)
  const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!
  for (let start = 1; start <= count; start += batch) {
    const rows: AudienceRow[] = []
    for (let i = start; i < start + batch && i <= count; i++) {
      const first = pick(FIRST)
      const last = pick(LAST)
      const p = rand()
      const plan = p < 0.6 ? 'free' : p < 0.9 ? 'pro' : 'team'
      const seats = plan === 'free' ? 1 + Math.floor(rand() * 3) : plan === 'pro' ? 1 + Math.floor(rand() * 25) : 5 + Math.floor(rand() * 496)
      const local = `${ascii(first)}.${ascii(last)}`
      rows.push({ email: `${local}.${i}@${pick(DOMAINS)}`, first_name: first, last_name: last, plan, seats })
    }
    yield rows
  }
}

/** RFC 4180 quoting where a value needs it. */
function csvCell(v: string): string {
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v
}

/** Writes the CSV (header, then `count` rows, CRLF-free) to `path`, streaming, and says what is in it. */
export async function writeAudienceCsv(path: string, count: number, seed: number): Promise<AudienceStats> {
  const sink = Bun.file(path).writer({ highWaterMark: 1 << 20 })
  const stats: AudienceStats = { rows: 0, bytes: 0, plans: { free: 0, pro: 0, team: 0 }, segmentMatches: 0 }
  const encoder = new TextEncoder()
  const put = async (text: string) => {
    stats.bytes += encoder.encode(text).byteLength
    sink.write(text)
    await sink.flush()
  }
  await put(CSV_HEADER + '\n')
  for (const rows of audienceBatches(count, seed, 10_000)) {
    let text = ''
    for (const r of rows) {
      text += `${r.email},${csvCell(r.first_name)},${csvCell(r.last_name)},${r.plan},${r.seats}\n`
      stats.rows++
      stats.plans[r.plan]++
      if (r.plan === 'pro' && r.seats >= SEGMENT_MIN_SEATS) stats.segmentMatches++
    }
    await put(text)
  }
  await sink.end()
  return stats
}
