/**
 * A doorbell between the code that queues work and the engine that does it: accepting mail
 * rings it, and the delivery engine, attached once the server process has started it, wakes
 * up at once instead of at its next poll. Before an engine is attached (and in tests that
 * drive the engine by hand) a ring reaches no one, which loses nothing: the engine reads the
 * queue when it starts and on every poll.
 */
export interface Doorbell {
  /** New work is due now. */
  ring(): void
  /** Who answers the rings from now on (the last one attached). */
  attach(listener: { wake(): void }): void
}

/** A doorbell with no one attached yet. */
export function createDoorbell(): Doorbell {
  let listener: { wake(): void } | null = null
  return {
    ring: () => listener?.wake(),
    attach: (l) => {
      listener = l
    },
  }
}
