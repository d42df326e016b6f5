import type { Config } from './config'
import type { Db } from './db/client'
import type { Clock } from './lib/clock'
import type { Logger } from './lib/logger'
import type { SecretBox } from './lib/secret-box'

/** What services receive as their first argument: no globals, so tests swap any part. */
export interface Deps {
  db: Db
  clock: Clock
  log: Logger
  config: Readonly<Config>
  secrets: SecretBox
}
