import type { Config } from './config'
import type { Db } from './db/client'
import { createGroupCommitter, type GroupCommitter } from './db/group-commit'
import type { Clock } from './lib/clock'
import { createDoorbell, type Doorbell } from './lib/doorbell'
import type { TextPool } from './lib/html-text-pool'
import type { Logger } from './lib/logger'
import type { SecretBox } from './lib/secret-box'

/** What services receive as their first argument: no globals, so tests swap any part. */
export interface Deps {
  db: Db
  clock: Clock
  log: Logger
  config: Readonly<Config>
  secrets: SecretBox
  /**
   * The group committer of `db` (db/group-commit.ts): accepted mail, tracking events and
   * delivery outcomes share its transactions, so many writers pay for one fsync. One per
   * database, made where the deps are.
   */
  commits: GroupCommitter
  /** Rung when accepted mail is due now; the delivery engine attaches to it (lib/doorbell.ts). */
  doorbell: Doorbell
  /** The server's text worker for HTML-only API sends (lib/html-text-pool.ts); without it, texts are made inline. */
  textPool?: TextPool
}

/** Deps around an open database: its group committer, and a doorbell no engine is attached to yet. */
export function createDeps<B extends Omit<Deps, 'commits' | 'doorbell'>>(base: B): B & Deps {
  return { ...base, commits: createGroupCommitter(base.db), doorbell: createDoorbell() }
}
