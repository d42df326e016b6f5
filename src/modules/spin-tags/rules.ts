/**
 * The rules for spin tags, shared by the spin-tags resource and the template checker
 * (which refuses `{{spin "name"}}` with a name that could never be a tag). No app imports.
 */

/** A lower-case identifier: a letter, then letters, digits and underscores; at most 63 characters. */
export const SPIN_TAG_NAME = /^[a-z][a-z0-9_]{0,62}$/
export const SPIN_TAG_NAME_PATTERN = SPIN_TAG_NAME.source

export const MIN_ALTERNATIVES = 2
export const MAX_ALTERNATIVES = 100
export const MAX_ALTERNATIVE_LENGTH = 2000

/** Per-item problems of a list of alternatives, keyed like validation_failed details (`alternatives.3`). */
export function checkAlternatives(alternatives: readonly string[]): Record<string, string[]> {
  const errors: Record<string, string[]> = {}
  if (alternatives.length < MIN_ALTERNATIVES || alternatives.length > MAX_ALTERNATIVES) {
    errors.alternatives = [`must hold ${MIN_ALTERNATIVES} to ${MAX_ALTERNATIVES} alternatives`]
  }
  alternatives.forEach((a, i) => {
    if (a.trim() === '') errors[`alternatives.${i}`] = ['must not be empty or only spaces']
    else if (a.length > MAX_ALTERNATIVE_LENGTH) errors[`alternatives.${i}`] = [`must be at most ${MAX_ALTERNATIVE_LENGTH} characters`]
  })
  return errors
}
