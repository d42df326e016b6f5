import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { CompiledVersion } from './engine'

/** At most this many compiled versions, and at most this much template source, per database. */
export const CACHE_MAX_ENTRIES = 500
export const CACHE_MAX_CHARS = 64 * 1024 * 1024

/**
 * Least-recently-used map of compiled versions by version id. Versions are immutable and
 * their ids are never reused (AUTOINCREMENT), so an entry never goes stale; deleting a
 * template only leaves entries that age out.
 */
export class CompiledCache {
  private entries = new Map<number, CompiledVersion>()
  private chars = 0

  constructor(
    private readonly maxEntries = CACHE_MAX_ENTRIES,
    private readonly maxChars = CACHE_MAX_CHARS,
  ) {}

  get(versionId: number): CompiledVersion | undefined {
    const hit = this.entries.get(versionId)
    if (hit) {
      // Re-insert: Map keeps insertion order, so the first key is the least recently used.
      this.entries.delete(versionId)
      this.entries.set(versionId, hit)
    }
    return hit
  }

  set(versionId: number, compiled: CompiledVersion): void {
    const old = this.entries.get(versionId)
    if (old) {
      this.entries.delete(versionId)
      this.chars -= old.size
    }
    this.entries.set(versionId, compiled)
    this.chars += compiled.size
    while (this.entries.size > this.maxEntries || (this.chars > this.maxChars && this.entries.size > 1)) {
      const [oldest, entry] = this.entries.entries().next().value!
      this.entries.delete(oldest)
      this.chars -= entry.size
    }
  }

  get size(): number {
    return this.entries.size
  }
}

/** The cache of one database handle (tests open many in-memory databases whose version ids overlap). */
export const compiledCacheOf = preparedFor((_db: Db) => new CompiledCache())
