import { describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadConfig, readConfigFile, SETTINGS } from '../src/config'
import { tempDir } from './support/temp-dirs'

describe('configuration', () => {
  test('defaults', () => {
    const c = loadConfig({ env: {}, flags: { hostname: 'mx.example.com' } })
    expect(c).toMatchObject({
      data_dir: './data',
      http_listen: { host: '127.0.0.1', port: 8825 },
      public_url: 'http://127.0.0.1:8825',
      hostname: 'mx.example.com',
      log_level: 'info',
      default_rate_limit: 600,
      trust_proxy: false,
    })
    expect(Object.isFrozen(c)).toBe(true)
  })

  test('file < environment < flags', () => {
    const file = { data_dir: '/from/file', log_level: 'warn', http_listen: '0.0.0.0:9000' }
    const env = { MAILROOM_DATA_DIR: '/from/env', MAILROOM_LOG_LEVEL: 'debug' }
    const flags = { 'data-dir': '/from/flag' }
    const c = loadConfig({ file, env, flags })
    expect(c.data_dir).toBe('/from/flag')
    expect(c.log_level).toBe('debug')
    expect(c.http_listen).toEqual({ host: '0.0.0.0', port: 9000 })
    expect(c.public_url).toBe('http://0.0.0.0:9000')
  })

  test('IPv6 listen addresses and "unlimited"', () => {
    const c = loadConfig({ env: { MAILROOM_HTTP_LISTEN: '[::1]:8080', MAILROOM_DEFAULT_RATE_LIMIT: 'unlimited' } })
    expect(c.http_listen).toEqual({ host: '::1', port: 8080 })
    expect(c.public_url).toBe('http://[::1]:8080')
    expect(c.default_rate_limit).toBeNull()
  })

  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ MAILROOM_HTTP_LISTEN: '8825' }, /^invalid http_listen from MAILROOM_HTTP_LISTEN \("8825"\): expected HOST:PORT/],
    [{ MAILROOM_HTTP_LISTEN: '127.0.0.1:70000' }, /http_listen .*port must be 0-65535/],
    [{ MAILROOM_PUBLIC_URL: 'ftp://x' }, /public_url .*http or https/],
    [{ MAILROOM_PUBLIC_URL: 'not a url' }, /public_url .*absolute/],
    [{ MAILROOM_HOSTNAME: 'bad host!' }, /hostname .*DNS host name/],
    [{ MAILROOM_LOG_LEVEL: 'loud' }, /log_level .*debug, info, warn, error/],
    [{ MAILROOM_ACCESS_LOG: 'maybe' }, /access_log .*true or false/],
    [{ MAILROOM_MAX_BODY_BYTES: '-5' }, /max_body_bytes .*whole number/],
    [{ MAILROOM_DEFAULT_RATE_LIMIT: '0' }, /default_rate_limit .*at least 1/],
  ]
  for (const [env, message] of bad) {
    test(`refuses ${JSON.stringify(env)} with one line naming the setting`, () => {
      let error: unknown
      try {
        loadConfig({ env })
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(ConfigError)
      expect((error as Error).message).toMatch(message)
      expect((error as Error).message).not.toContain('\n')
    })
  }

  test('unknown keys and broken TOML in the file are refused', () => {
    expect(() => loadConfig({ file: { data_dri: 'x' } })).toThrow('unknown setting "data_dri"')
    const dir = tempDir('mailroom-cfg-')
    writeFileSync(join(dir, 'bad.toml'), 'data_dir = "unterminated')
    expect(() => readConfigFile(join(dir, 'bad.toml'))).toThrow(/not valid TOML/)
    expect(() => readConfigFile(join(dir, 'missing.toml'))).toThrow(/cannot be read/)
    writeFileSync(join(dir, 'ok.toml'), 'data_dir = "/srv/mailroom"\nmax_body_bytes = 2048\n')
    expect(loadConfig({ file: readConfigFile(join(dir, 'ok.toml')) })).toMatchObject({ data_dir: '/srv/mailroom', max_body_bytes: 2048 })
  })

  test('docs/operations.md documents every setting with its variable and flag', () => {
    const doc = readFileSync(join(import.meta.dir, '../docs/operations.md'), 'utf8')
    for (const s of SETTINGS) {
      expect(doc).toContain(`\`${s.env}\``)
      expect(doc).toContain(`\`--${s.flag}\``)
      expect(doc).toContain(`\`${s.key}\``)
    }
  })
})
