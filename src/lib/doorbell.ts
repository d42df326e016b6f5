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
  /**
   * Who answers the rings from now on: the last one attached in its slot ('delivery' unless
   * named; the broadcast runner has its own), so every engine hears a ring.
   */
  attach(listener: { wake(): void }, slot?: string): void
}

/** A doorbell with no one attached yet. */
export function createDoorbell(): Doorbell {
  const listeners = new Map<string, { wake(): void }>()
  return {
    ring: () => {
      for (const l of listeners.values()) l.wake()
    },
    attach: (l, slot = 'delivery') => {
      listeners.set(slot, l)
    },
  }
}
