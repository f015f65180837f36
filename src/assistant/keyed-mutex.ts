/**
 * Serialises work per key (per user): two chats for one user run one after the other, so
 * neither reads history the other is about to change; different users never wait for each
 * other. An entry lives only while someone holds or waits for it, so memory follows the
 * number of active users, not of all users ever seen.
 */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  /** Resolves with a release function once every earlier holder of `key` has released. */
  async acquire(key: string, signal?: AbortSignal): Promise<() => void> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    const done = () => {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    };

    if (signal) {
      const aborted = new Promise<never>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
      try {
        await Promise.race([previous, aborted]);
      } catch (error) {
        // Give up our place without blocking those queued behind us.
        previous.then(done);
        throw error;
      }
    } else {
      await previous;
    }
    return done;
  }
}
