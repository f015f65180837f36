/**
 * Failed credentials per client address, in a sliding window: past `maxFailures` in
 * `windowMs`, every try from that address waits (a right credential too, or guessing could go
 * on unseen). Two instances, counted apart: the web client's sign-ins (routes/session.ts) and
 * bearer credentials on the API (http/credential-throttle.ts). A key has 256 random bits, so
 * this is not what keeps a key secret; it keeps the sign-in page and the API from being a
 * guessing tool for an operator's token (API_TOKEN, METRICS_TOKEN), which may be weak.
 *
 * Kept in memory: each replica (and worker) counts its own, and a restart forgets.
 */
export class FailureThrottle {
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  /** An address's failures in the window, oldest first (never more than maxFailures). */
  readonly #failures = new Map<string, number[]>();

  readonly #maxAddresses: number;

  constructor(options: {
    maxFailures: number;
    windowMs: number;
    /** Addresses remembered at most: guesses from a wide range cannot grow the map forever. */
    maxAddresses?: number;
    now?: () => number;
  }) {
    this.#maxFailures = options.maxFailures;
    this.#windowMs = options.windowMs;
    this.#maxAddresses = options.maxAddresses ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** Whether no address has a failure counted (nobody needs to be looked up). */
  get idle(): boolean {
    return this.#failures.size === 0;
  }

  /** Seconds until `address` may try again; undefined when it may now. */
  retryAfterSeconds(address: string): number | undefined {
    const recent = this.#recent(address, this.#now());
    if (recent.length < this.#maxFailures) return undefined;
    return Math.max(1, Math.ceil(((recent[0] as number) + this.#windowMs - this.#now()) / 1000));
  }

  /** Counts a failure; answers the failures now in the window (`maxFailures`: it must wait). */
  failed(address: string): number {
    const now = this.#now();
    const recent = this.#recent(address, now);
    recent.push(now);
    if (recent.length > this.#maxFailures) recent.shift();
    this.#failures.delete(address); // re-inserted: the map stays in order of last failure
    this.#failures.set(address, recent);
    // Addresses that stopped failing are forgotten, a sweep now and then rather than timers.
    if (this.#failures.size > this.#maxAddresses) {
      for (const other of [...this.#failures.keys()]) this.#recent(other, now);
      // Still too many (one guesser spread over many addresses): the longest-quiet go first,
      // which lets them try again sooner but keeps the memory bounded.
      // Down to 90 %, so a full map is not swept again on every new address.
      for (const other of this.#failures.keys()) {
        if (this.#failures.size <= this.#maxAddresses * 0.9) break;
        this.#failures.delete(other);
      }
    }
    return recent.length;
  }

  #recent(address: string, now: number): number[] {
    const times = this.#failures.get(address) ?? [];
    const fresh = times.filter((at) => now - at < this.#windowMs);
    if (fresh.length === 0) this.#failures.delete(address);
    return fresh;
  }
}
