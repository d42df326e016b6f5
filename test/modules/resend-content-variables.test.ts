import { expect, test } from 'bun:test'
import { translateResendVariables } from '../../src/modules/resend/content-variables'
import { buildVariables, compileVersion, renderVersion } from '../../src/modules/templates/engine'

/** Resend's content variables become the native template variables, which the native engine renders. */
const cases: Array<[string, 'subject' | 'html' | 'text', string]> = [
  ['Hi {{{FIRST_NAME}}}', 'text', 'Hi {{first_name}}'],
  ['Hi {{{ FIRST_NAME | there }}}', 'text', 'Hi {{#if first_name}}{{first_name}}{{else}}there{{/if}}'],
  ['{{{LAST_NAME}}} <{{{EMAIL}}}>', 'subject', '{{last_name}} <{{email}}>'],
  ['<a href="{{{RESEND_UNSUBSCRIBE_URL}}}">x</a>', 'html', '<a href="{{unsubscribe_url}}">x</a>'],
  ['{{{FIRST_NAME|Tom & Jerry}}}', 'html', '{{#if first_name}}{{first_name}}{{else}}Tom &amp; Jerry{{/if}}'],
  ['{{{FIRST_NAME|Tom & Jerry}}}', 'text', '{{#if first_name}}{{first_name}}{{else}}Tom & Jerry{{/if}}'],
  ['{{{COMPANY|us}}}', 'text', '{{#if company}}{{company}}{{else}}us{{/if}}'],
  // Native variables pass through untouched.
  ['Hi {{first_name}}', 'text', 'Hi {{first_name}}'],
]

test.each(cases)('%p (%s)', (source, part, expected) => {
  expect(translateResendVariables(source, part)).toBe(expected)
})

test('a translated fallback renders when the contact has no value, and the value when it has one', () => {
  const compiled = compileVersion({ subject: translateResendVariables('Hi {{{FIRST_NAME|friend}}}', 'subject'), html: null, text: null })
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.errors))
  const render = (first_name: string) => {
    const v = buildVariables({ first_name })
    if (!v.ok) throw new Error('variables')
    return renderVersion(compiled.compiled, { to: 'a@example.net', versionId: 1, variables: v.variables, spinTags: new Map() })
  }
  expect(render('').subject).toBe('Hi friend')
  expect(render('Ann')).toMatchObject({ subject: 'Hi Ann', missing_variables: [] })
})
