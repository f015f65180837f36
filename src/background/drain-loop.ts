/**
 * Runs a drain (the job runner's sweep) now and then: at start, on an interval when given one
 * (work other replicas stored, lost jobs) and whenever asked. A call while a drain runs does
 * not start a second one; it makes the running one go round once more, so work stored
 * meanwhile is never missed.
 */
export class DrainLoop {
  readonly #drain: () => Promise<void>;
  readonly #onError: (error: unknown) => void;
  readonly #intervalMs: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  /** Callers waiting for the next drain to finish. */
  readonly #waiting: (() => void)[] = [];

  constructor(
    drain: () => Promise<void>,
    onError: (error: unknown) => void,
    intervalMs?: number | undefined,
  ) {
    this.#drain = drain;
    this.#onError = onError;
    this.#intervalMs = intervalMs;
  }

  start(): void {
    if (this.#intervalMs !== undefined) {
      this.#timer = setInterval(() => void this.kick(), this.#intervalMs);
      this.#timer.unref();
    }
    void this.kick();
  }

  /** Resolves once a drain that started after this call has finished (or at once if stopped). */
  kick(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.#waiting.push(resolve));
    if (this.#running) {
      this.#again = true;
      return done;
    }
    const waiters = this.#waiting.splice(0);
    this.#running = this.#drain()
      .catch(this.#onError)
      .finally(() => {
        this.#running = undefined;
        for (const resolve of waiters) resolve();
        if (this.#again) {
          this.#again = false;
          void this.kick();
        }
      });
    return done;
  }

  /** No drain starts after this; resolves once the one under way (if any) has finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#again = false;
    await this.#running;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}
